-- The names of guilds' roles (a read-model fed by guilds.role.* events), so an edited channel
-- message's feed excerpt names a mentioned role as guilds' first excerpt did, not as `@role`.
CREATE TABLE role_names (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  -- The guilds event's time: an older event never overwrites a newer name.
  version timestamptz NOT NULL
);
