-- A track lasts at least a second, the shortest length a client can give: a file read as a few
-- milliseconds long would otherwise end on every round of the clock (hundreds of events a second
-- while it loops). Lengths already stored below that count as a second, as new ones do.
UPDATE tracks SET duration_ms = 1000 WHERE duration_ms < 1000;
ALTER TABLE tracks DROP CONSTRAINT tracks_duration_ms_check;
ALTER TABLE tracks ADD CONSTRAINT tracks_duration_ms_check CHECK (duration_ms >= 1000);
