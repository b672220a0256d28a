-- 1:1 conversations keyed as the contracts now write ids, in lower case. A pair key was made from
-- the ids as a client wrote them, so a conversation opened with an upper-case id got a key of its
-- own ('0A..:0b..' beside '0a..:0b..'): opening it again with the id in lower case did not find it
-- and made a second conversation with the same two people. The key is '<smaller>:<larger>' of the
-- two ids in lower case, ordered by code point as pairKey in src/db/relationships.ts orders them.
CREATE OR REPLACE FUNCTION pg_temp.canonical_pair_key(pair_key text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT least(a, b) || ':' || greatest(a, b)
  FROM (SELECT lower(split_part(pair_key, ':', 1)) COLLATE "C" AS a, lower(split_part(pair_key, ':', 2)) COLLATE "C" AS b) ids
$$;

-- The conversations of each pair that has one under an old key, and the one kept: the one under
-- the right key when there is one (the one clients open now), else the oldest. One pass over the
-- keys finds the old ones; the right keys of their pairs come through the unique index.
CREATE TEMP TABLE pair_merges ON COMMIT DROP AS
WITH old_keys AS (
  SELECT id, created_at, pair_key, pg_temp.canonical_pair_key(pair_key) AS canonical
  FROM conversations
  WHERE pair_key IS NOT NULL AND pair_key <> pg_temp.canonical_pair_key(pair_key)
), pairs AS (
  SELECT id, created_at, pair_key, canonical FROM old_keys
  UNION ALL
  SELECT c.id, c.created_at, c.pair_key, c.pair_key FROM conversations c WHERE c.pair_key IN (SELECT canonical FROM old_keys)
), ranked AS (
  SELECT id, first_value(id) OVER (PARTITION BY canonical ORDER BY pair_key = canonical DESC, created_at, id) AS kept_id FROM pairs
)
SELECT id AS merged_id, kept_id FROM ranked WHERE id <> kept_id;

-- What the two people wrote, their calls and their notifications move to the kept conversation.
-- Ids are UUID v7, so the merged history pages in time order.
UPDATE direct_messages m SET conversation_id = p.kept_id FROM pair_merges p WHERE m.conversation_id = p.merged_id;
UPDATE notifications n SET conversation_id = p.kept_id FROM pair_merges p WHERE n.conversation_id = p.merged_id;
-- One live call per conversation: a live call of a merged one ends when the kept one has its own
-- (or another merged one of the pair has an older one).
UPDATE calls c SET state = 'ended', ended_at = now(), end_reason = CASE WHEN c.answered_at IS NULL THEN 'missed' ELSE 'completed' END
FROM pair_merges p
WHERE c.conversation_id = p.merged_id AND c.state <> 'ended'
  AND EXISTS (
    SELECT 1 FROM calls live LEFT JOIN pair_merges other ON other.merged_id = live.conversation_id
    WHERE live.state <> 'ended' AND live.id <> c.id
      AND (live.conversation_id = p.kept_id OR (other.kept_id = p.kept_id AND live.id < c.id)));
UPDATE calls c SET conversation_id = p.kept_id FROM pair_merges p WHERE c.conversation_id = p.merged_id;

-- A read mark is the furthest any of the conversations had (ids compare as their text in "C").
INSERT INTO read_states AS r (user_id, target_id, kind, last_read_message_id)
SELECT r.user_id, p.kept_id, 'conversation', max(r.last_read_message_id::text COLLATE "C")::uuid
FROM read_states r JOIN pair_merges p ON r.target_id = p.merged_id
GROUP BY r.user_id, p.kept_id
ON CONFLICT (user_id, target_id) DO UPDATE
  SET last_read_message_id = GREATEST(r.last_read_message_id, EXCLUDED.last_read_message_id);
DELETE FROM read_states r USING pair_merges p WHERE r.target_id = p.merged_id;

UPDATE conversations k
SET last_activity_at = GREATEST(k.last_activity_at, merged.last_activity_at),
    created_at = LEAST(k.created_at, merged.created_at)
FROM (
  SELECT p.kept_id, max(c.last_activity_at) AS last_activity_at, min(c.created_at) AS created_at
  FROM pair_merges p JOIN conversations c ON c.id = p.merged_id
  GROUP BY p.kept_id
) merged
WHERE k.id = merged.kept_id;

-- The merged conversations go, with their participants (the same two people).
DELETE FROM conversations c USING pair_merges p WHERE c.id = p.merged_id;

UPDATE conversations SET pair_key = pg_temp.canonical_pair_key(pair_key)
WHERE pair_key IS NOT NULL AND pair_key <> pg_temp.canonical_pair_key(pair_key);
