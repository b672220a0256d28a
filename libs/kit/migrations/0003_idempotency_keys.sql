-- Idempotency-Key: the first answer of a creating request, kept 24 h per scope (a user, a webhook)
-- and key; json, not jsonb, so that a replay gives back the same bytes. Written in the same
-- transaction as the write it answers: never a key without its write, nor a write without its key.
CREATE TABLE idempotency_keys (
  scope text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  status integer NOT NULL,
  response json,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
