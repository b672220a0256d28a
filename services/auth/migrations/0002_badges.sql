-- Badges beyond founder. verified_email: the account was created through an emailed code;
-- staff: granted by an operator command; server_owner: kept by the guilds read-model below.
ALTER TABLE users
  ADD COLUMN email_verified_at timestamptz,
  ADD COLUMN is_staff boolean NOT NULL DEFAULT false,
  ADD COLUMN is_server_owner boolean NOT NULL DEFAULT false;

-- Read-model of guilds' servers and members (guilds.server.* and guilds.member.* events, two
-- consumers whose order relative to each other is not guaranteed: a member may arrive before
-- its server, so owner_id is null until the server's own event does).
CREATE TABLE guild_servers (
  id uuid PRIMARY KEY,
  owner_id uuid,
  members integer NOT NULL DEFAULT 0
);
CREATE INDEX guild_servers_owner ON guild_servers (owner_id);

-- The membership set: counting changes of this set (not events) keeps `members` exact even if an
-- event were applied twice. Joins and leaves come through one consumer, in the stream's order.
CREATE TABLE guild_members (
  server_id uuid NOT NULL,
  user_id uuid NOT NULL,
  PRIMARY KEY (server_id, user_id)
);
