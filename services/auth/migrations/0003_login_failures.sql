-- Failed logins per login string over a rolling 15 minutes (domain/login-limit.ts): the gateway's
-- Auth tier limits each client address, not the account, so many addresses could guess one
-- account's password for ever. The key is the SHA-256 of the login as lower() folds it (the fold
-- that finds the account), so unknown logins are counted exactly like known ones and the table
-- says nothing about which accounts exist, nor keeps a password typed into the login field. A row
-- is written before the password is checked and removed if it was right; past the limit the login
-- answers 429 without a check.
CREATE TABLE login_failures (
  login_key bytea NOT NULL,
  failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_failures_key ON login_failures (login_key, failed_at);
