-- The length of an audio upload, read from the file's own metadata at upload (music-metadata), so
-- that the music player can end its tracks by itself. NULL for anything that is not audio.
ALTER TABLE media_files ADD COLUMN duration_seconds double precision CHECK (duration_seconds >= 0);
