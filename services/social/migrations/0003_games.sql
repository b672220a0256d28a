-- The game index: a catalogue the project ships (data/games.json), loaded at start when the file
-- changed and reloadable by an operator command. Searched with pg_trgm (typo-tolerant).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE games (
  id uuid PRIMARY KEY,
  -- The normalised name: what keeps a game's id stable across reloads of the file.
  slug text NOT NULL UNIQUE,
  name text NOT NULL,
  aliases text[] NOT NULL DEFAULT '{}',
  executables text[] NOT NULL DEFAULT '{}',
  cover_url text,
  release_year integer
);

-- Every searchable name of a game (its name and each alias), normalised: lower case, accents
-- stripped, anything but letters and digits as one space.
CREATE TABLE game_names (
  game_id uuid NOT NULL REFERENCES games (id) ON DELETE CASCADE,
  name text NOT NULL,
  PRIMARY KEY (game_id, name)
);
CREATE INDEX game_names_trgm ON game_names USING gin (name gin_trgm_ops);

-- pg_trgm prices its similarity operators like a plain comparison, so on a table this small the
-- planner computes similarity for every name instead of probing the trigram index, three times
-- slower here. Priced as what they are, the index wins. A database owner that does not own the
-- extension's functions (a trusted extension installed by a non-superuser) keeps the default.
DO $$
BEGIN
  ALTER FUNCTION similarity_op(text, text) COST 1000;
  ALTER FUNCTION word_similarity_commutator_op(text, text) COST 1000;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'pg_trgm operator costs left as they are: %', SQLERRM;
END $$;

-- Which file the catalogue was loaded from (sha-256 of its bytes); one row.
CREATE TABLE game_catalogue (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  checksum text NOT NULL,
  games integer NOT NULL,
  loaded_at timestamptz NOT NULL DEFAULT now()
);

-- What each user is playing now: a game of the index or a free name.
CREATE TABLE activities (
  user_id uuid PRIMARY KEY,
  game_id uuid REFERENCES games (id) ON DELETE SET NULL,
  name text NOT NULL,
  started_at timestamptz NOT NULL
);
