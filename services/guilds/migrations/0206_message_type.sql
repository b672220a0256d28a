-- Every channel message has a type, as on Discord: system messages (a member joined, a message was
-- pinned) are messages too. Existing messages are replies or default ones.
ALTER TABLE messages ADD COLUMN type text NOT NULL DEFAULT 'default'
  CHECK (type IN ('default', 'reply', 'member_join', 'pinned', 'call_started', 'call_missed', 'call_ended'));
UPDATE messages SET type = 'reply' WHERE reply_to_id IS NOT NULL;
