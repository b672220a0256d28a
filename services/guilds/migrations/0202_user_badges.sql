-- The badges auth computes (auth.user.* events), shown with each member like DMs' senderBadges.
ALTER TABLE users ADD COLUMN badges text[] NOT NULL DEFAULT '{}';
