-- No version bumps for a server created in the same transaction (a template import).
--
-- The access version (0210) and the channel-list version (0212) tell readers that what they keep
-- of a server may be stale. A server that is still being created in this transaction has no
-- reader: nobody can hold an access snapshot or a channel list of a row they cannot see, and the
-- first reader after the commit reads the finished server. Yet the per-row triggers bumped the
-- same `servers` row (or `channel_list_versions` row) once per role, channel and override an
-- import writes: an import of 250 roles did ~31,000 bumps and took 42 s.
--
-- The transaction that creates a server names it in the transaction-local setting
-- `guilds.fresh_server` (set_config(..., true): it ends with the transaction, commit or rollback,
-- so a pooled connection never carries it to the next one). The bumps skip that server only;
-- every other server, and every other path, bumps exactly as before.
CREATE FUNCTION is_fresh_server(server uuid) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT server = nullif(current_setting('guilds.fresh_server', true), '')::uuid
$$;

CREATE OR REPLACE FUNCTION bump_access_version(server uuid) RETURNS void LANGUAGE sql AS $$
  UPDATE servers SET access_version = access_version + 1 WHERE id = server AND NOT coalesce(is_fresh_server(server), false)
$$;

CREATE OR REPLACE FUNCTION bump_channel_list_version(server uuid) RETURNS void LANGUAGE sql AS $$
  INSERT INTO channel_list_versions (server_id, version)
  SELECT id, 1 FROM servers WHERE id = server AND NOT coalesce(is_fresh_server(server), false)
  ON CONFLICT (server_id) DO UPDATE SET version = channel_list_versions.version + 1
$$;
