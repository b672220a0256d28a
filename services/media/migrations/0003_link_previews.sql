-- Link previews by normalised url: a preview for a day, a failure (its public message) for a few
-- minutes, so that a page linked in many messages is fetched once.
CREATE TABLE link_previews (
  url text PRIMARY KEY,
  preview jsonb,
  error text,
  expires_at timestamptz NOT NULL,
  CHECK ((preview IS NULL) <> (error IS NULL))
);

CREATE INDEX link_previews_expiry_idx ON link_previews (expires_at);
