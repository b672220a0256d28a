-- Notification settings (0008), three fixes:
-- - A channel's level is looked up by the channel id as text (`channels ->> id`), and ids are
--   written in lower case everywhere; a level stored under an upper-case key never applied. The
--   body is lower-cased since; the keys stored before are lower-cased here (when a key was stored
--   in both cases, either level is kept).
-- - Settings are deleted with their server (guilds.server.deleted): by server, not by user.
-- - Settings are deleted when their user leaves the server (guilds.member.left), unless written
--   after the leave (a rejoin's, whichever is applied first): `updated_at` says when.
UPDATE notification_settings s
SET channels = (SELECT jsonb_object_agg(lower(e.key), e.value) FROM jsonb_each(s.channels) AS e)
WHERE EXISTS (SELECT 1 FROM jsonb_object_keys(s.channels) AS k WHERE k <> lower(k));

CREATE INDEX notification_settings_server ON notification_settings (server_id);

ALTER TABLE notification_settings ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
