-- The player clock: a track with a known duration ends by itself. `ends_at` is when the current
-- track ends (NULL while idle, paused, or of unknown length); any replica's clock advances a player
-- whose `ends_at` has passed, under the row lock, so each end advances once.
ALTER TABLE tracks ADD COLUMN duration_ms bigint CHECK (duration_ms > 0);
-- Play order: the first by (sort_key, seq) is current. Shuffle moves the chosen next track to the
-- front; queue loop moves a finished track to the back.
ALTER TABLE tracks ADD COLUMN sort_key bigint;
UPDATE tracks SET sort_key = seq;
ALTER TABLE tracks ALTER COLUMN sort_key SET NOT NULL;
DROP INDEX tracks_queue;
CREATE INDEX tracks_queue ON tracks (channel_id, sort_key, seq);

ALTER TABLE players ADD COLUMN ends_at timestamptz;
ALTER TABLE players ADD COLUMN loop text NOT NULL DEFAULT 'off' CHECK (loop IN ('off', 'track', 'queue'));
ALTER TABLE players ADD COLUMN shuffle boolean NOT NULL DEFAULT false;
CREATE INDEX players_due ON players (ends_at) WHERE ends_at IS NOT NULL;
