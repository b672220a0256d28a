-- Message types (Discord's, by name; the enum is MessageType in libs/contracts): what people wrote
-- so far is `default`, or `reply` when it answers another message.
ALTER TABLE direct_messages ADD COLUMN type text NOT NULL DEFAULT 'default'
  CHECK (type IN ('default', 'reply', 'member_join', 'pinned', 'call_started', 'call_missed', 'call_ended'));
UPDATE direct_messages SET type = 'reply' WHERE reply_to_id IS NOT NULL;
