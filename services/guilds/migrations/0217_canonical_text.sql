-- Shown text in one spelling, as the contracts now write it: server names, descriptions and tags
-- in Unicode NFC (discovery searched an NFD name in vain by its NFC spelling), one tag per
-- case-insensitive spelling, DJ roles once each, and custom emoji reactions (`name:id`) in lower
-- case (`PARTY:ID` and `party:id` were two reactions of one emoji).

UPDATE servers SET name = normalize(name, NFC) WHERE name IS NOT NFC NORMALIZED;

UPDATE servers SET description = normalize(description, NFC) WHERE description IS NOT NFC NORMALIZED;

-- Each tag in NFC, the first of each case-insensitive spelling kept, in the order written.
UPDATE servers s
SET tags = ARRAY(
  SELECT first.tag
  FROM (
    SELECT DISTINCT ON (lower(normalize(t.tag, NFC))) normalize(t.tag, NFC) AS tag, t.n
    FROM unnest(s.tags) WITH ORDINALITY AS t (tag, n)
    ORDER BY lower(normalize(t.tag, NFC)), t.n
  ) first
  ORDER BY first.n
)
WHERE EXISTS (SELECT 1 FROM unnest(s.tags) t WHERE t IS NOT NFC NORMALIZED)
   OR cardinality(s.tags) <> (SELECT count(DISTINCT lower(normalize(t, NFC))) FROM unnest(s.tags) t);

UPDATE servers s
SET dj_role_ids = ARRAY(
  SELECT first.id
  FROM (SELECT DISTINCT ON (d.id) d.id, d.n FROM unnest(s.dj_role_ids) WITH ORDINALITY AS d (id, n) ORDER BY d.id, d.n) first
  ORDER BY first.n
)
WHERE cardinality(s.dj_role_ids) <> (SELECT count(DISTINCT d) FROM unnest(s.dj_role_ids) d);

-- A user's reaction under two spellings of one custom emoji becomes one: the earliest is kept.
DELETE FROM message_reactions r
USING message_reactions keep
WHERE r.emoji ~ '^[A-Za-z0-9_]+:[0-9A-Fa-f-]+$'
  AND keep.message_id = r.message_id
  AND keep.user_id = r.user_id
  AND lower(keep.emoji) = lower(r.emoji)
  AND (keep.created_at, keep.emoji) < (r.created_at, r.emoji);

UPDATE message_reactions SET emoji = lower(emoji)
WHERE emoji ~ '^[A-Za-z0-9_]+:[0-9A-Fa-f-]+$' AND emoji <> lower(emoji);
