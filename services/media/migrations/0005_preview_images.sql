-- Link-preview images, stored once per content: a page fetched under many query strings, or many
-- pages with one logo, share one object. An image that a message's embeds show is kept for good
-- (the message holds its url); any other goes once no cached preview names it.
CREATE TABLE preview_images (
  media_id uuid PRIMARY KEY REFERENCES media_files (id) ON DELETE CASCADE,
  sha256 text NOT NULL,
  embedded boolean NOT NULL DEFAULT false,
  -- When a preview last took it: one still being built names it before its cache row is written.
  used_at timestamptz NOT NULL
);
CREATE INDEX preview_images_sha256_idx ON preview_images (sha256);

-- The preview image a cached preview shows, so that one no preview names can be found.
ALTER TABLE link_previews ADD COLUMN image_id uuid;
CREATE INDEX link_previews_image_idx ON link_previews (image_id) WHERE image_id IS NOT NULL;

-- Preview images stored before this: whether a message shows them is not known, so they stay.
INSERT INTO preview_images (media_id, sha256, embedded, used_at)
SELECT id, sha256, true, created_at FROM media_files WHERE uploader_id = '00000000-0000-0000-0000-000000000000';
