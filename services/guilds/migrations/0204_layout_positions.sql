-- Positions stay 0..n-1 among a category's channels (the uncategorised ones form one group) and
-- among a server's categories. Renumber what exists, then let the database hold the rule: the
-- constraints are checked at commit, so a transaction may shift siblings through a transient
-- duplicate while it renumbers them.
UPDATE channels c SET position = o.rn - 1
FROM (SELECT id, row_number() OVER (PARTITION BY server_id, category_id ORDER BY position, id) AS rn FROM channels) o
WHERE c.id = o.id AND c.position <> o.rn - 1;

UPDATE categories k SET position = o.rn - 1
FROM (SELECT id, row_number() OVER (PARTITION BY server_id ORDER BY position, id) AS rn FROM categories) o
WHERE k.id = o.id AND k.position <> o.rn - 1;

ALTER TABLE channels ADD CONSTRAINT channels_position_unique
  UNIQUE NULLS NOT DISTINCT (server_id, category_id, position) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE categories ADD CONSTRAINT categories_position_unique
  UNIQUE (server_id, position) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE channels ADD CONSTRAINT channels_position_nonnegative CHECK (position >= 0);
ALTER TABLE categories ADD CONSTRAINT categories_position_nonnegative CHECK (position >= 0);
