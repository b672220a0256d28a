-- One player per voice channel. Every control locks its row (SELECT ... FOR UPDATE), which is what
-- keeps replicas consistent: concurrent plays queue in lock order, concurrent skips skip once.
CREATE TABLE players (
  channel_id uuid PRIMARY KEY,
  server_id uuid NOT NULL,
  -- When the current track would have started had it never paused; NULL when idle.
  started_at timestamptz,
  -- Milliseconds into the current track while paused; NULL while playing or idle.
  paused_position_ms bigint CHECK (paused_position_ms >= 0),
  volume smallint NOT NULL DEFAULT 100 CHECK (volume BETWEEN 0 AND 200),
  version bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (paused_position_ms IS NULL OR started_at IS NOT NULL)
);

-- The queue of a player; the first by seq is the current track.
CREATE TABLE tracks (
  id uuid PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  channel_id uuid NOT NULL REFERENCES players (channel_id) ON DELETE CASCADE,
  url text NOT NULL,
  title text NOT NULL,
  requested_by uuid NOT NULL,
  added_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tracks_queue ON tracks (channel_id, seq);
