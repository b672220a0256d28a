-- The sweeper walks the records in the byte order of their keys, the order in which S3 lists
-- objects, so that both lists are merged in one pass with bounded memory.
CREATE INDEX media_files_storage_key_bytewise_idx ON media_files (storage_key COLLATE "C");
