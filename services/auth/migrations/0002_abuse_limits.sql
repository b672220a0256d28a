-- Wrong password-reset codes per account over a rolling day (issue 16, item 6): each new reset code
-- starts with fresh attempts, so the day's count is what bounds guessing. A successful reset clears it.
CREATE TABLE password_reset_failures (
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX password_reset_failures_user ON password_reset_failures (user_id, failed_at);

-- Mails sent per address (lower case) over a rolling hour (issue 16, item 7): nobody can make this
-- service flood an address by registering it, resending codes or asking for resets.
CREATE TABLE mail_sends (
  address text NOT NULL,
  sent_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mail_sends_address ON mail_sends (address, sent_at);

-- A registration whose email already has an account (issue 16, item 7): answered like any other
-- (202 {pendingId}), the owner is told by mail, and no code can ever complete it.
ALTER TABLE pending_registrations ADD COLUMN email_taken boolean NOT NULL DEFAULT false;
