-- Link previews of a message's first links, stored when media has resolved them (posting never waits).
ALTER TABLE direct_messages ADD COLUMN embeds jsonb NOT NULL DEFAULT '[]';
