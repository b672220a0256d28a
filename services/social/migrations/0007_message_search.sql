-- Full-text search of direct messages (issue 19). The `simple` configuration (no stemming, no
-- stop words: names and every language are found as written) over the text without accents, so
-- "cafe" finds "Café". A generated column follows every edit and delete at once, in the same
-- transaction; the GIN index answers the words, the filter on the caller's conversations runs on its hits.
CREATE EXTENSION IF NOT EXISTS unaccent;

-- unaccent() is only STABLE (its dictionary could change), and a generated column takes only
-- IMMUTABLE functions. Naming the dictionary and the schema makes the result depend on nothing
-- else; the SQL-standard body binds both when the function is created.
CREATE FUNCTION message_search_text(content text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN public.unaccent('public.unaccent'::regdictionary, content);

ALTER TABLE direct_messages
  ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, message_search_text(content))) STORED;
CREATE INDEX direct_messages_search ON direct_messages USING gin (search);
