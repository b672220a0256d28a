-- A role's deletion takes its channel overrides first (RETURNING them for their events); the unique
-- index leads with channel_id, so without this it, and the cascade before it, read the whole table.
CREATE INDEX IF NOT EXISTS channel_overrides_role_id ON channel_overrides (role_id) WHERE role_id IS NOT NULL;
