-- A preview image fetched and kept for a user, by their GET link-preview or for links in their
-- message, counts against that user's upload quota (bytes per day, files per hour) while it is
-- kept. Before, previews stored any image up to 5 MiB, as often as links could be asked for,
-- counted against nobody; those a message shows are kept for good. Images kept before this are
-- charged to nobody.
ALTER TABLE preview_images ADD COLUMN charged_to uuid;
CREATE INDEX preview_images_charged_to_idx ON preview_images (charged_to) WHERE charged_to IS NOT NULL;
