-- Accounts. Usernames and emails are unique ignoring case; the original spelling is kept.
CREATE TABLE users (
  id uuid PRIMARY KEY,
  username text NOT NULL,
  email text NOT NULL,
  password_hash text NOT NULL,
  display_name text NOT NULL,
  avatar_url text,
  bio text NOT NULL DEFAULT '',
  status text NOT NULL DEFAULT 'online',
  custom_status text NOT NULL DEFAULT '',
  -- Decided once, at registration (founder_slots below).
  is_founder boolean NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_username_key ON users (lower(username));
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

-- One row counting the founder badges handed out. Taking a slot locks the row until the
-- registration commits, so concurrent registrations never hand out more than the limit, and a
-- registration that rolls back gives its slot back.
CREATE TABLE founder_slots (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  taken integer NOT NULL
);
INSERT INTO founder_slots (taken) VALUES (0);

-- A session is one refresh-token family: every rotation stays in it, and revoking it ends them all.
CREATE TABLE sessions (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  revoked_reason text
);
CREATE INDEX sessions_user ON sessions (user_id);

-- Refresh tokens, stored only as SHA-256 hashes. A used (rotated-out) token stays, so that
-- presenting it again is recognised as reuse.
CREATE TABLE refresh_tokens (
  token_hash bytea PRIMARY KEY,
  session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

-- Registrations waiting for their email code: no account exists until the code is verified.
CREATE TABLE pending_registrations (
  id uuid PRIMARY KEY,
  username text NOT NULL,
  email text NOT NULL,
  password_hash text NOT NULL,
  display_name text NOT NULL,
  code_hash bytea NOT NULL,
  code_expires_at timestamptz NOT NULL,
  failed_attempts integer NOT NULL DEFAULT 0,
  code_sent_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now()
);

-- At most one live password reset code per account; a new request replaces it.
CREATE TABLE password_resets (
  user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  code_hash bytea NOT NULL,
  code_expires_at timestamptz NOT NULL,
  failed_attempts integer NOT NULL DEFAULT 0,
  code_sent_at timestamptz NOT NULL DEFAULT now()
);
