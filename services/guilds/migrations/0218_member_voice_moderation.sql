-- Server mute and deafen belong to the member, as Discord's guild member `mute` and `deaf`: a
-- member a moderator muted stays muted after leaving voice and joining again, until a moderator
-- unmutes them. Before, the flags lived on the voice state only, and a new connection started
-- without them: leaving and rejoining undid a moderator's mute. The voice state keeps a copy for
-- its readers (VoiceState.serverMute/serverDeaf, the media grant), which a join takes from here.
-- Leaving the server deletes the member, and the flags with it.
ALTER TABLE members
  ADD COLUMN IF NOT EXISTS voice_mute boolean NOT NULL DEFAULT false,
  ADD COLUMN IF NOT EXISTS voice_deaf boolean NOT NULL DEFAULT false;

-- A mute or deafen standing now stands on.
UPDATE members m SET voice_mute = v.server_mute, voice_deaf = v.server_deaf
FROM voice_states v
WHERE v.server_id = m.server_id AND v.user_id = m.user_id AND (v.server_mute OR v.server_deaf);
