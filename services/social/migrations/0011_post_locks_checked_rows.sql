-- post_direct_message (0009) locks what its checks find, as the foreign keys of its INSERT would
-- (FOR KEY SHARE), from the check until it commits. Unlocked, a leave or a delete committed between
-- the check and the INSERT, which then failed on direct_messages' foreign keys (a 500):
-- - the sender's participant row: a leave deletes it (lockGroupParticipants takes it FOR UPDATE
--   first), and the last one out deletes the conversation with it. A post that finds it locked
--   waits, then finds the sender gone ('not_found'); a leave that finds it locked waits for the
--   post, which lands before the leave, never after it. The conversation row is not locked: the
--   last leave deletes it while holding the participants, so a post holding a share of it and
--   waiting for the participant row would deadlock with that leave.
-- - the reply target: a delete takes it FOR UPDATE (lockMessage). A post that finds it locked
--   waits, then finds it gone ('no_reply'); a delete that finds it locked waits for the post, and
--   its ON DELETE SET NULL then clears the new reply's reply_to_id.
-- Edits (UPDATE of non-key columns) do not conflict with these locks.
CREATE OR REPLACE FUNCTION post_direct_message(
  p_id uuid,
  p_conversation_id uuid,
  p_sender_id uuid,
  p_content text,
  p_attachments jsonb,
  p_reply_to_id uuid,
  p_type text,
  p_created_at timestamptz,
  p_event_id uuid,
  p_event_subject text,
  p_event_payload jsonb,
  p_event_headers jsonb
) RETURNS TABLE (outcome text, id uuid, sender_name text, sender_avatar text, sender_badges text[], audience_ids uuid[])
LANGUAGE plpgsql AS $$
DECLARE
  group_conversation boolean;
  audience uuid[];
  latest uuid;
  new_id uuid;
  sender users%ROWTYPE;
  message jsonb;
BEGIN
  SELECT c.is_group INTO group_conversation
  FROM conversations c JOIN conversation_participants me ON me.conversation_id = c.id AND me.user_id = p_sender_id
  WHERE c.id = p_conversation_id
  FOR KEY SHARE OF me;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found', NULL::uuid, NULL::text, NULL::text, NULL::text[], NULL::uuid[];
    RETURN;
  END IF;
  IF NOT group_conversation AND EXISTS (
       SELECT 1 FROM conversation_participants o JOIN blocks b
         ON (b.blocker_id = p_sender_id AND b.blocked_id = o.user_id) OR (b.blocker_id = o.user_id AND b.blocked_id = p_sender_id)
       WHERE o.conversation_id = p_conversation_id AND o.user_id <> p_sender_id) THEN
    RETURN QUERY SELECT 'blocked', NULL::uuid, NULL::text, NULL::text, NULL::text[], NULL::uuid[];
    RETURN;
  END IF;
  IF p_reply_to_id IS NOT NULL THEN
    PERFORM FROM direct_messages m WHERE m.id = p_reply_to_id AND m.conversation_id = p_conversation_id FOR KEY SHARE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'no_reply', NULL::uuid, NULL::text, NULL::text, NULL::text[], NULL::uuid[];
      RETURN;
    END IF;
  END IF;
  -- Who the message reaches: the participants, less those who blocked the sender.
  audience := ARRAY(
    SELECT o.user_id FROM conversation_participants o
    WHERE o.conversation_id = p_conversation_id
      AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker_id = o.user_id AND b.blocked_id = p_sender_id)
    ORDER BY o.user_id);

  PERFORM pg_advisory_xact_lock_shared(hashtextextended('direct_messages:' || p_conversation_id, 0));
  SELECT m.id INTO latest FROM direct_messages m WHERE m.conversation_id = p_conversation_id ORDER BY m.id DESC LIMIT 1;
  new_id := next_message_id(latest, p_id);

  INSERT INTO direct_messages (id, conversation_id, sender_id, content, attachments, reply_to_id, type, created_at)
  VALUES (new_id, p_conversation_id, p_sender_id, p_content, p_attachments, p_reply_to_id, p_type, p_created_at);

  SELECT * INTO sender FROM users u WHERE u.id = p_sender_id;
  -- A sender the read-model does not know yet reads 'Unknown user' (as toMessage in src/db/messages.ts).
  message := (p_event_payload -> 'data' -> 'message') || jsonb_build_object(
    'id', new_id, 'senderName', COALESCE(sender.display_name, 'Unknown user'), 'senderAvatar', sender.avatar_url,
    'senderBadges', to_jsonb(COALESCE(sender.badges, '{}')));
  INSERT INTO outbox (id, subject, payload, headers)
  VALUES (p_event_id, p_event_subject,
          jsonb_set(jsonb_set(p_event_payload, '{data,message}', message), '{data,participantIds}', to_jsonb(audience)),
          p_event_headers);

  RETURN QUERY SELECT 'posted', new_id, sender.display_name, sender.avatar_url, sender.badges, audience;
END $$;
