-- Records of applied events are deleted once the streams no longer keep those events (a redelivery
-- is then impossible): purgeProcessedEvents finds them by age. BRIN, not a B-tree: the table is
-- appended in time order, so the index stays a few pages and costs the consumers' inserts nothing.
CREATE INDEX processed_events_age ON processed_events USING brin (processed_at);
