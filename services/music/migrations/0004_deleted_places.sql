-- Voice channels and servers that guilds deleted (guilds.channel.deleted, guilds.server.deleted),
-- remembered for a while after the deletion's players were removed. A control asks guilds first and
-- writes after: one whose check passed just before a deletion could otherwise create a player once
-- the deletion was applied, and the clock would run it for ever. Controls take a per-server advisory
-- lock in shared mode and look here; applying a deletion takes it exclusively, so each waits for the
-- other and one of them sees what the other committed. Rows older than an hour are purged (a control
-- is in flight for seconds at most).
CREATE TABLE deleted_channels (
  channel_id uuid PRIMARY KEY,
  deleted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deleted_channels_age ON deleted_channels (deleted_at);

CREATE TABLE deleted_servers (
  server_id uuid PRIMARY KEY,
  deleted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deleted_servers_age ON deleted_servers (deleted_at);

-- Removing a server's players looks them up by server.
CREATE INDEX players_server ON players (server_id);
