-- A voice state belongs to a member of its server. Leaving, a kick and a ban end the member's state
-- in their own transaction (src/domain/membership.ts), with guilds.voice.left `removed`; before,
-- the sweeper ended it seconds later, and a member who rejoined in between found the old state
-- counting again. The key makes a removal that forgets fail, and turns a join that raced a removal
-- (it checked membership before the removal committed) into a foreign-key violation, which the
-- join's retry answers as for a non-member.
--
-- The states of users removed before this migration expire now: no reader counts them any more,
-- and the sweeper ends them as usual (guilds.voice.left, the emptied temporary channel deleted).
-- NOT VALID only spares those rows the check; every row written from now on is checked.
UPDATE voice_states v SET expires_at = now()
WHERE NOT EXISTS (SELECT 1 FROM members m WHERE m.server_id = v.server_id AND m.user_id = v.user_id);

ALTER TABLE voice_states ADD CONSTRAINT voice_states_member
  FOREIGN KEY (server_id, user_id) REFERENCES members (server_id, user_id) NOT VALID;
