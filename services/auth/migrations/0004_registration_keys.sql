-- The Idempotency-Key of a registration (DESIGN: every creating POST accepts one), so that a client
-- whose register answered 502 or 504 can retry it. Not the kit's idempotency_keys table: its stored
-- answer would be the token pair in plain text. A retry proves itself with the password instead and
-- gets a fresh session (domain/registration-retry.ts). Keys live a day, as the kit's do.
CREATE TABLE registration_keys (
  key text PRIMARY KEY,
  user_id uuid REFERENCES users (id) ON DELETE CASCADE,
  pending_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((user_id IS NULL) <> (pending_id IS NULL))
);
CREATE INDEX registration_keys_created ON registration_keys (created_at);
