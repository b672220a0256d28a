-- Read-model of auth's users, fed by auth.user.registered / auth.user.updated (no call to auth
-- per row). `version` is the occurredAt of the event applied last: a redelivered older event
-- never overwrites a newer one.
CREATE TABLE users (
  id uuid PRIMARY KEY,
  username text NOT NULL,
  display_name text NOT NULL,
  avatar_url text,
  badges text[] NOT NULL DEFAULT '{}',
  version timestamptz NOT NULL
);
-- Not unique: a rename and a re-use of the old name may reach us in either order.
CREATE INDEX users_username ON users (lower(username));

-- A pending request from requester to recipient.
CREATE TABLE friend_requests (
  requester_id uuid NOT NULL,
  recipient_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (requester_id, recipient_id),
  CHECK (requester_id <> recipient_id)
);
CREATE INDEX friend_requests_recipient ON friend_requests (recipient_id);

-- A friendship is two rows, one per side, so "my friends" is one index range.
CREATE TABLE friendships (
  user_id uuid NOT NULL,
  friend_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, friend_id),
  CHECK (user_id <> friend_id)
);

CREATE TABLE blocks (
  blocker_id uuid NOT NULL,
  blocked_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (blocker_id, blocked_id),
  CHECK (blocker_id <> blocked_id)
);
CREATE INDEX blocks_blocked ON blocks (blocked_id);

CREATE TABLE conversations (
  id uuid PRIMARY KEY,
  is_group boolean NOT NULL,
  owner_id uuid,
  -- '<smaller id>:<larger id>' of a 1:1 pair: unique, so concurrent creation lands on one row.
  pair_key text UNIQUE,
  -- The highest message id ever issued here; new ids are made greater than it, so ids grow in
  -- commit order within a conversation and cursor paging sees no gaps.
  last_message_id uuid,
  last_activity_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (is_group = (pair_key IS NULL))
);

CREATE TABLE conversation_participants (
  conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  joined_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conversation_id, user_id)
);
CREATE INDEX conversation_participants_user ON conversation_participants (user_id);

CREATE TABLE direct_messages (
  -- UUID v7: time-ordered, the cursor of message paging.
  id uuid PRIMARY KEY,
  conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  sender_id uuid NOT NULL,
  content text NOT NULL,
  -- {key: {url, filename, contentType, size}} as the media service stored them.
  attachments jsonb NOT NULL DEFAULT '{}',
  reply_to_id uuid REFERENCES direct_messages (id) ON DELETE SET NULL,
  edited_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX direct_messages_page ON direct_messages (conversation_id, id);

CREATE TABLE dm_reactions (
  message_id uuid NOT NULL REFERENCES direct_messages (id) ON DELETE CASCADE,
  emoji text NOT NULL,
  user_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (message_id, emoji, user_id)
);
