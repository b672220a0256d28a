-- Custom emoji reactions to direct messages (`name:id`) in lower case, as the contracts now write
-- them and as guilds' 0217_canonical_text.sql does for channel messages (`PARTY:ID` and `party:id`
-- were two reactions of one emoji).

-- A user's reaction under two spellings of one custom emoji becomes one: the earliest is kept.
DELETE FROM dm_reactions r
USING dm_reactions keep
WHERE r.emoji ~ '^[A-Za-z0-9_]+:[0-9A-Fa-f-]+$'
  AND keep.message_id = r.message_id
  AND keep.user_id = r.user_id
  AND lower(keep.emoji) = lower(r.emoji)
  AND (keep.created_at, keep.emoji) < (r.created_at, r.emoji);

UPDATE dm_reactions SET emoji = lower(emoji)
WHERE emoji ~ '^[A-Za-z0-9_]+:[0-9A-Fa-f-]+$' AND emoji <> lower(emoji);
