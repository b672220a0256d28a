-- Channel messages, reactions, pins, slowmode and webhooks (issue 8).

CREATE TABLE messages (
  -- UUID v7, issued so that ids of a channel grow in commit order (see src/db/messages.ts): the cursor.
  id uuid PRIMARY KEY,
  channel_id uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  server_id uuid NOT NULL,
  -- The user, or the webhook for a webhook message (Discord's convention).
  author_id uuid NOT NULL,
  -- Set for webhook messages only: users' names and avatars come from the users read-model.
  webhook_id uuid,
  author_name text,
  author_avatar text,
  content text NOT NULL,
  attachments jsonb NOT NULL DEFAULT '{}',
  -- No foreign key: a reply keeps pointing at a deleted message, as in Discord.
  reply_to_id uuid,
  mentions jsonb NOT NULL,
  pinned_at timestamptz,
  edited_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((webhook_id IS NULL) = (author_name IS NULL))
);
CREATE INDEX messages_channel ON messages (channel_id, id);
CREATE INDEX messages_pins ON messages (channel_id, pinned_at DESC, id DESC) WHERE pinned_at IS NOT NULL;

CREATE TABLE message_reactions (
  message_id uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  emoji text NOT NULL,
  user_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (message_id, emoji, user_id)
);

-- When each member last posted in a slowmode channel: in the database so every replica sees it.
CREATE TABLE slowmode_marks (
  channel_id uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  sent_at timestamptz NOT NULL,
  PRIMARY KEY (channel_id, user_id)
);

CREATE TABLE webhooks (
  id uuid PRIMARY KEY,
  channel_id uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
  server_id uuid NOT NULL,
  name text NOT NULL,
  avatar_url text,
  -- SHA-256 of the token; the token itself is shown once, at creation, and stored nowhere.
  token_hash bytea NOT NULL,
  created_by uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_channel ON webhooks (channel_id, created_at);
