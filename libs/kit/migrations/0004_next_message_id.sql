-- The id of the next message of a channel or conversation, in SQL for the services' one-statement
-- posts (guilds' post_channel_message, social's post_direct_message): `fresh`, a UUID v7 the
-- process made, unless it does not sort after `latest` (another replica's clock is ahead); then a
-- UUID v7 one millisecond past `latest`, keeping fresh's random bits. The same rule as
-- nextMessageId in libs/messaging/src/ids.ts, so that ids grow in commit order and cursor paging
-- never skips a message.
CREATE FUNCTION next_message_id(latest uuid, fresh uuid) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN latest IS NULL OR fresh > latest THEN fresh
    ELSE (lpad(to_hex(('x' || substr(replace(latest::text, '-', ''), 1, 12))::bit(48)::bigint + 1), 12, '0')
          || substr(replace(fresh::text, '-', ''), 13))::uuid
  END
$$;
