-- feed_names.name_key is lowercased for case-insensitive lookups; keep each name as it was
-- written too, so that alternate names round-trip with their spelling.
ALTER TABLE feed_names ADD COLUMN name TEXT NOT NULL DEFAULT '';
UPDATE feed_names
   SET name = COALESCE((SELECT f.name FROM feeds f WHERE f.id = feed_names.feed_id AND feed_names.is_primary = 1), name_key);
