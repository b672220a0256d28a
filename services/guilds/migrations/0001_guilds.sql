-- Servers and everything inside them. Permission masks are bigint (Discord bit positions, below 2^53).

CREATE TABLE servers (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  icon_url text,
  banner_url text,
  description text,
  owner_id uuid NOT NULL,
  is_public boolean NOT NULL DEFAULT false,
  require_approval boolean NOT NULL DEFAULT false,
  entrance_channel_id uuid,
  afk_channel_id uuid,
  jtc_channel_id uuid,
  tags text[] NOT NULL DEFAULT '{}',
  -- Kept in the same transaction as every join and leave: discovery sorts by it.
  member_count integer NOT NULL DEFAULT 0 CHECK (member_count >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX servers_discovery ON servers (member_count DESC, id DESC) WHERE is_public;

-- As in Discord, the @everyone role's id is the server's id, so it needs no lookup and its
-- channel overrides are role overrides like any other.
CREATE TABLE roles (
  id uuid PRIMARY KEY,
  server_id uuid NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  name text NOT NULL,
  color integer NOT NULL DEFAULT 0,
  permissions bigint NOT NULL DEFAULT 0,
  -- 0 is @everyone; higher outranks lower.
  position integer NOT NULL,
  hoist boolean NOT NULL DEFAULT false,
  mentionable boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX roles_server ON roles (server_id, position);

CREATE TABLE categories (
  id uuid PRIMARY KEY,
  server_id uuid NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  name text NOT NULL,
  position integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX categories_server ON categories (server_id, position);

CREATE TABLE channels (
  id uuid PRIMARY KEY,
  server_id uuid NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  -- A deleted category leaves its channels uncategorised.
  category_id uuid REFERENCES categories (id) ON DELETE SET NULL,
  name text NOT NULL,
  topic text,
  channel_type text NOT NULL CHECK (channel_type IN ('text', 'voice')),
  position integer NOT NULL,
  is_nsfw boolean NOT NULL DEFAULT false,
  slowmode_seconds integer NOT NULL DEFAULT 0,
  owner_id uuid,
  is_temporary boolean NOT NULL DEFAULT false,
  is_locked boolean NOT NULL DEFAULT false,
  is_hidden boolean NOT NULL DEFAULT false,
  user_limit integer NOT NULL DEFAULT 0,
  music_locked boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channels_server ON channels (server_id, position);
CREATE INDEX channels_category ON channels (category_id);

-- Deleting a channel the server points at clears the pointer.
ALTER TABLE servers
  ADD FOREIGN KEY (entrance_channel_id) REFERENCES channels (id) ON DELETE SET NULL,
  ADD FOREIGN KEY (afk_channel_id) REFERENCES channels (id) ON DELETE SET NULL,
  ADD FOREIGN KEY (jtc_channel_id) REFERENCES channels (id) ON DELETE SET NULL;

CREATE TABLE members (
  server_id uuid NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  nickname text,
  joined_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (server_id, user_id)
);
CREATE INDEX members_user ON members (user_id);

CREATE TABLE member_roles (
  server_id uuid NOT NULL,
  user_id uuid NOT NULL,
  role_id uuid NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
  PRIMARY KEY (server_id, user_id, role_id),
  FOREIGN KEY (server_id, user_id) REFERENCES members (server_id, user_id) ON DELETE CASCADE
);
CREATE INDEX member_roles_role ON member_roles (role_id);

CREATE TABLE bans (
  server_id uuid NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  banned_by uuid NOT NULL,
  reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (server_id, user_id)
);

CREATE TABLE invites (
  code text PRIMARY KEY,
  server_id uuid NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  inviter_id uuid NOT NULL,
  uses integer NOT NULL DEFAULT 0,
  -- 0: unlimited (Discord's convention).
  max_uses integer NOT NULL DEFAULT 0,
  expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invites_server ON invites (server_id, created_at);

CREATE TABLE join_requests (
  id uuid PRIMARY KEY,
  server_id uuid NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  message text,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
  reviewed_by uuid,
  reviewed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX join_requests_one_pending ON join_requests (server_id, user_id) WHERE status = 'pending';
CREATE INDEX join_requests_user ON join_requests (user_id, created_at);

CREATE TABLE channel_overrides (
  id uuid PRIMARY KEY,
  channel_id uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  role_id uuid REFERENCES roles (id) ON DELETE CASCADE,
  user_id uuid,
  allow_bits bigint NOT NULL DEFAULT 0,
  deny_bits bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((role_id IS NULL) <> (user_id IS NULL))
);
CREATE UNIQUE INDEX channel_overrides_role ON channel_overrides (channel_id, role_id) WHERE role_id IS NOT NULL;
CREATE UNIQUE INDEX channel_overrides_user ON channel_overrides (channel_id, user_id) WHERE user_id IS NOT NULL;

-- Read-model of auth's users (auth.user.registered / auth.user.updated): names on bans and members.
CREATE TABLE users (
  id uuid PRIMARY KEY,
  username text NOT NULL,
  display_name text NOT NULL,
  avatar_url text,
  -- occurredAt of the event applied last, so an older event never overwrites a newer one.
  version timestamptz NOT NULL
);
