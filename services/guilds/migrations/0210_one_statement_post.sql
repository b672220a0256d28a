-- A message post in one statement (issue 18).
--
-- 1. servers.access_version: bumped in the same transaction as every change that can change what a
--    member may do in a channel of the server (roles, a member's roles, leaving or being removed,
--    bans, channel overrides, a channel's own settings, the owner). The service keeps an access
--    snapshot per (channel, member) in memory with the version it was read at, and the post
--    statement checks that version: a stale snapshot can never authorise, it is reloaded instead.
--    A member joining bumps nothing: nobody held a snapshot that let them post.
ALTER TABLE servers ADD COLUMN access_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION bump_access_version(server uuid) RETURNS void LANGUAGE sql AS $$
  UPDATE servers SET access_version = access_version + 1 WHERE id = server
$$;

CREATE FUNCTION bump_access_version_of_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  PERFORM bump_access_version(changed.server_id);
  RETURN NULL;
END $$;

CREATE FUNCTION bump_access_version_of_override() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed record := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  PERFORM bump_access_version(c.server_id) FROM channels c WHERE c.id = changed.channel_id;
  RETURN NULL;
END $$;

CREATE TRIGGER roles_access_version AFTER INSERT OR UPDATE OR DELETE ON roles
  FOR EACH ROW EXECUTE FUNCTION bump_access_version_of_row();
CREATE TRIGGER member_roles_access_version AFTER INSERT OR UPDATE OR DELETE ON member_roles
  FOR EACH ROW EXECUTE FUNCTION bump_access_version_of_row();
CREATE TRIGGER members_access_version AFTER DELETE ON members
  FOR EACH ROW EXECUTE FUNCTION bump_access_version_of_row();
CREATE TRIGGER bans_access_version AFTER INSERT OR UPDATE OR DELETE ON bans
  FOR EACH ROW EXECUTE FUNCTION bump_access_version_of_row();
CREATE TRIGGER channels_access_version AFTER UPDATE OR DELETE ON channels
  FOR EACH ROW EXECUTE FUNCTION bump_access_version_of_row();
CREATE TRIGGER channel_overrides_access_version AFTER INSERT OR UPDATE OR DELETE ON channel_overrides
  FOR EACH ROW EXECUTE FUNCTION bump_access_version_of_override();

CREATE FUNCTION bump_own_access_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.access_version := OLD.access_version + 1;
  RETURN NEW;
END $$;
CREATE TRIGGER servers_owner_access_version BEFORE UPDATE OF owner_id ON servers
  FOR EACH ROW WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id) EXECUTE FUNCTION bump_own_access_version();

-- 2. post_channel_message: the checks and writes of a post in one round trip, in the order the
--    service used to run them in a transaction: the access version (when the caller authorised with
--    a snapshot), the reply target, the slowmode slot (when the channel has one and the author is
--    not exempt), then the channel's write lock taken shared, the latest id, the insert and the
--    outbox row. PL/pgSQL because each statement of a VOLATILE function takes a fresh snapshot: the
--    latest id is read after the lock is held, which keeps ids growing in commit order (see
--    src/db/messages.ts). A refusal writes nothing and answers why, in `outcome`:
--    'stale' (the version moved), 'no_reply' (no such message in this channel), 'slowmode'
--    (`retry_after` seconds remain), or 'posted' with the message.
--    The event's envelope comes from the service, parsed by its contract; the statement fills in
--    what only the database knows: the id (when it had to move past the latest) and the author's
--    name and avatar from the users read-model (as toMessage does).
CREATE FUNCTION post_channel_message(
  p_access_version bigint,
  p_slowmode_seconds integer,
  p_id uuid,
  p_channel_id uuid,
  p_server_id uuid,
  p_author_id uuid,
  p_content text,
  p_attachments jsonb,
  p_reply_to_id uuid,
  p_mentions jsonb,
  p_type text,
  p_webhook_id uuid,
  p_author_name text,
  p_author_avatar text,
  p_created_at timestamptz,
  p_event_id uuid,
  p_event_subject text,
  p_event_payload jsonb,
  p_event_headers jsonb
) RETURNS TABLE (outcome text, retry_after float8, id uuid, author_name text, author_avatar text)
LANGUAGE plpgsql AS $$
DECLARE
  latest uuid;
  new_id uuid;
  shown_name text;
  shown_avatar text;
BEGIN
  IF p_access_version IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM servers s WHERE s.id = p_server_id AND s.access_version = p_access_version) THEN
    RETURN QUERY SELECT 'stale', NULL::float8, NULL::uuid, NULL::text, NULL::text;
    RETURN;
  END IF;
  IF p_reply_to_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = p_reply_to_id AND m.channel_id = p_channel_id) THEN
    RETURN QUERY SELECT 'no_reply', NULL::float8, NULL::uuid, NULL::text, NULL::text;
    RETURN;
  END IF;
  IF p_slowmode_seconds > 0 THEN
    -- As claimSlowmodeSlot: concurrent posts of one member queue on the row, one gets through.
    INSERT INTO slowmode_marks AS s (channel_id, user_id, sent_at) VALUES (p_channel_id, p_author_id, clock_timestamp())
      ON CONFLICT (channel_id, user_id) DO UPDATE SET sent_at = EXCLUDED.sent_at
        WHERE s.sent_at <= EXCLUDED.sent_at - make_interval(secs => p_slowmode_seconds);
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'slowmode',
        (SELECT extract(epoch FROM s.sent_at + make_interval(secs => p_slowmode_seconds) - clock_timestamp())::float8
         FROM slowmode_marks s WHERE s.channel_id = p_channel_id AND s.user_id = p_author_id),
        NULL::uuid, NULL::text, NULL::text;
      RETURN;
    END IF;
  END IF;

  PERFORM pg_advisory_xact_lock_shared(hashtextextended('messages:' || p_channel_id, 0));
  SELECT m.id INTO latest FROM messages m WHERE m.channel_id = p_channel_id ORDER BY m.id DESC LIMIT 1;
  new_id := next_message_id(latest, p_id);

  INSERT INTO messages (id, channel_id, server_id, author_id, content, attachments, reply_to_id, mentions, type,
                        webhook_id, author_name, author_avatar, created_at)
  VALUES (new_id, p_channel_id, p_server_id, p_author_id, p_content, p_attachments, p_reply_to_id, p_mentions, p_type,
          p_webhook_id, p_author_name, p_author_avatar, p_created_at);

  -- A webhook message carries its own name and avatar; a user's come from the read-model, and an
  -- author it does not know yet reads 'Unknown user' (as toMessage in src/db/messages.ts).
  IF p_webhook_id IS NOT NULL THEN
    shown_name := p_author_name;
    shown_avatar := p_author_avatar;
  ELSE
    SELECT u.display_name, u.avatar_url INTO shown_name, shown_avatar FROM users u WHERE u.id = p_author_id;
  END IF;

  INSERT INTO outbox (id, subject, payload, headers)
  VALUES (p_event_id, p_event_subject,
          jsonb_set(p_event_payload, '{data}', (p_event_payload -> 'data') || jsonb_build_object(
            'id', new_id, 'authorName', COALESCE(shown_name, 'Unknown user'), 'authorAvatar', shown_avatar)),
          p_event_headers);

  RETURN QUERY SELECT 'posted', NULL::float8, new_id, shown_name, shown_avatar;
END $$;
