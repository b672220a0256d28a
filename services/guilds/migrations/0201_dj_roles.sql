-- Roles whose members control music in musicLocked voice channels (at most 10, roles of the same
-- server; a deleted role leaves the list with it).
ALTER TABLE servers ADD COLUMN dj_role_ids uuid[] NOT NULL DEFAULT '{}';
