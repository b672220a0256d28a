-- Server mute and deafen (Discord's `mute` and `deaf`), set by moderators with MUTE_MEMBERS and
-- DEAFEN_MEMBERS. The voice state is the one source of truth: the media grant a member gets next
-- reads them (no publishing when muted, no subscribing when deafened).
ALTER TABLE voice_states
  ADD COLUMN server_mute boolean NOT NULL DEFAULT false,
  ADD COLUMN server_deaf boolean NOT NULL DEFAULT false;
