-- Read states, mentions and notifications (issue 19). Social never reads guilds' tables: channel
-- facts arrive as guilds' events (guilds.message.created/deleted, guilds.message.mentioned with
-- the users already resolved and allowed to view the channel) and who may view a channel now is
-- asked of guilds once per request (rpc.guilds.channels.visible).

-- Each channel's newest message id (as on Discord, a deleted message may stay the newest).
CREATE TABLE channel_heads (
  channel_id uuid PRIMARY KEY,
  server_id uuid NOT NULL,
  last_message_id uuid NOT NULL
);

-- Where a user has read up to in a channel or one of their conversations; only moves forwards.
-- A channel gets a row when the user acks it, posts in it or is mentioned in it.
CREATE TABLE read_states (
  user_id uuid NOT NULL,
  target_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('channel', 'conversation')),
  last_read_message_id uuid,
  PRIMARY KEY (user_id, target_id)
);

-- A channel message that counts as a mention of the user (the settings of the moment applied),
-- kept until the user acks past it.
CREATE TABLE channel_mentions (
  user_id uuid NOT NULL,
  channel_id uuid NOT NULL,
  message_id uuid NOT NULL,
  PRIMARY KEY (user_id, channel_id, message_id)
);
CREATE INDEX channel_mentions_message ON channel_mentions (message_id);

-- The feed. One entry of a fan-out (an @everyone) has the same id for every recipient.
CREATE TABLE notifications (
  user_id uuid NOT NULL,
  id uuid NOT NULL,
  kind text NOT NULL,
  via text,
  actor_id uuid,
  server_id uuid,
  channel_id uuid,
  conversation_id uuid,
  message_id uuid,
  call_id uuid,
  excerpt text,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, id)
);
CREATE INDEX notifications_message ON notifications (message_id) WHERE message_id IS NOT NULL;

-- How far each user has read the feed (a notification id; only forwards).
CREATE TABLE notification_reads (
  user_id uuid PRIMARY KEY,
  last_read_id uuid NOT NULL
);

-- Per user and server: level all|mentions|none, muted until, and channel levels {channelId: level}.
CREATE TABLE notification_settings (
  user_id uuid NOT NULL,
  server_id uuid NOT NULL,
  level text NOT NULL CHECK (level IN ('all', 'mentions', 'none')),
  mute_until timestamptz,
  channels jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (user_id, server_id)
);
