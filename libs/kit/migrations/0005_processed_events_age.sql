-- Records of applied events are deleted once the streams no longer keep those events (a redelivery
-- is then impossible): purgeProcessedEvents finds them by age. A B-tree, not a BRIN: the purge frees
-- the oldest pages and new records fill them, so a BRIN range would soon span old and new records
-- alike and find nothing; records arrive in time order, so each insert lands on the index's right edge.
CREATE INDEX processed_events_age ON processed_events (processed_at);
