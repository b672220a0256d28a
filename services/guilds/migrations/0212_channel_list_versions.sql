-- The version of each server's channel list (issue 18): bumped in the same transaction as every
-- change of what the list of a server's channels is made of (its channels, their permission
-- overrides, the categories that order them). guilds keeps each server's list in memory with the
-- version it was read at, and the membership query of every read answers the current version, so a
-- request serves the kept list only while nothing of it has changed; no event has to arrive first,
-- and every replica sees a change at once.
--
-- A table of its own, not a column of servers: the bump takes this row's lock, which nothing else
-- takes. The triggers are deferred to the commit, so a transaction takes that lock last, after every
-- other lock it takes, and two writers can never wait for each other in a cycle through it.
CREATE TABLE channel_list_versions (
  server_id uuid PRIMARY KEY REFERENCES servers (id) ON DELETE CASCADE,
  version bigint NOT NULL
);

-- The server may be gone by the commit (a deleted server deletes its channels): nothing to bump.
CREATE FUNCTION bump_channel_list_version(server uuid) RETURNS void LANGUAGE sql AS $$
  INSERT INTO channel_list_versions (server_id, version)
  SELECT id, 1 FROM servers WHERE id = server
  ON CONFLICT (server_id) DO UPDATE SET version = channel_list_versions.version + 1
$$;

CREATE FUNCTION bump_channel_list_version_of_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM bump_channel_list_version(CASE WHEN TG_OP = 'DELETE' THEN OLD.server_id ELSE NEW.server_id END);
  RETURN NULL;
END $$;

-- An override's channel may be gone by the commit too; then the channel's own deletion bumped.
CREATE FUNCTION bump_channel_list_version_of_override() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM bump_channel_list_version(c.server_id) FROM channels c
  WHERE c.id = CASE WHEN TG_OP = 'DELETE' THEN OLD.channel_id ELSE NEW.channel_id END;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER channels_list_version AFTER INSERT OR UPDATE OR DELETE ON channels
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_channel_list_version_of_row();
CREATE CONSTRAINT TRIGGER categories_list_version AFTER INSERT OR UPDATE OR DELETE ON categories
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_channel_list_version_of_row();
CREATE CONSTRAINT TRIGGER channel_overrides_list_version AFTER INSERT OR UPDATE OR DELETE ON channel_overrides
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_channel_list_version_of_override();
