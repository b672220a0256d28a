-- Wrong email-verification codes per address over a rolling day. Each registration gets 5 tries
-- of a 6-digit code, and anyone may register an address again and again: one in 200,000 a
-- registration, without end, claimed an address nobody had registered (and its verified badge).
-- Past the day's count, codes for the address are 16 digits, as reset codes past theirs
-- (0005_long_reset_codes.sql), so that the guessing cannot keep its owner from verifying either.
CREATE TABLE verification_failures (
  address text NOT NULL,
  failed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX verification_failures_address ON verification_failures (address, failed_at);

ALTER TABLE pending_registrations ADD COLUMN long_code boolean NOT NULL DEFAULT false;
