-- Voice states: who is connected to which voice channel. One per user across all servers (the primary
-- key), as in Discord: joining a channel replaces the user's state wherever it was.
CREATE TABLE voice_states (
  user_id uuid PRIMARY KEY,
  server_id uuid NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  -- A deleted channel disconnects everyone in it (guilds.channel.deleted tells the clients).
  channel_id uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  self_mute boolean NOT NULL DEFAULT false,
  self_deaf boolean NOT NULL DEFAULT false,
  joined_at timestamptz NOT NULL DEFAULT now(),
  -- Moved forward by each heartbeat. Past it the state no longer counts, and the sweeper ends it.
  -- No foreign key to members: a member who leaves or is kicked is ended by the sweeper, which
  -- emits guilds.voice.left and deletes an emptied temporary channel, rather than cascaded silently.
  expires_at timestamptz NOT NULL
);
CREATE INDEX voice_states_channel ON voice_states (channel_id);
CREATE INDEX voice_states_server ON voice_states (server_id);
CREATE INDEX voice_states_expiry ON voice_states (expires_at);
