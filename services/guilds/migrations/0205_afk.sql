-- AFK: after afk_timeout_seconds without activity (speaking, a state change, a move), a member
-- connected to a voice channel of the server is moved to its AFK channel.
ALTER TABLE servers ADD COLUMN afk_timeout_seconds integer NOT NULL DEFAULT 300
  CHECK (afk_timeout_seconds IN (60, 300, 900, 1800, 3600));
ALTER TABLE voice_states ADD COLUMN last_active_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX voice_states_activity ON voice_states (last_active_at);
