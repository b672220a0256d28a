-- The users read-model of @chat/messaging keeps badges too (one consumer for guilds and social).
ALTER TABLE users ADD COLUMN badges text[] NOT NULL DEFAULT '{}';
