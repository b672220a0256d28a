-- A reset code issued while the account is past its day's wrong codes is 16 digits long, and is
-- accepted despite them: guessing it is hopeless, so a stranger's guessing can no longer keep the
-- owner from resetting (before, 20 wrong codes a day stopped every reset of the account).
ALTER TABLE password_resets ADD COLUMN long_code boolean NOT NULL DEFAULT false;
