-- A mention of a message the user had already read past (they were reading the channel when it
-- arrived) still enters the feed, as Discord's Recent Mentions lists every mention, but read and
-- counted nowhere: the feed's one read mark cannot say so, since the entry's id is newer than it.
ALTER TABLE notifications ADD COLUMN arrived_read boolean NOT NULL DEFAULT false;
