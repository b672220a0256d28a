-- Joining by any way now approves the user's pending join request of that server (addMember in
-- src/domain/membership.ts). Requests left pending by members who joined before are approved here
-- alike, by no one: approving one after its user leaves would pull them back in, and they could
-- not ask again. (One of a user who came in and has left since cannot be told from a fresh one.)
UPDATE join_requests r SET status = 'approved', reviewed_at = now()
WHERE r.status = 'pending' AND EXISTS (SELECT 1 FROM members m WHERE m.server_id = r.server_id AND m.user_id = r.user_id);
