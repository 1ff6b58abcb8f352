-- What a search of a feed's packages matches (SEARCH_RANK in upack/read/query-repository.ts): the
-- name and, from the latest version's manifest, its title, descriptions and tags, kept on the
-- package row so that the web UI's first search of a new term (upack/read/browse-queries.ts) can
-- rule out most packages without reading every latest version's row. Only a pre-filter: a package
-- whose search_text holds the term is then ranked from the manifest itself, and a NULL search_text
-- (not known) is always ranked. Kept by triggers, so that every writer (uploads, imports, pulls,
-- edits, deletes) keeps it without knowing about it.
ALTER TABLE upack_packages ADD COLUMN search_text TEXT;

-- The texts joined by a line feed (LIKE's `%` spans it, so a term may match across two texts: the
-- ranking then finds no match, which only costs that package's ranking).
CREATE VIEW upack_search_texts AS
SELECT v.id AS version_id,
  coalesce(json_extract(v.manifest, '$.title'), '') || char(10) ||
  coalesce(json_extract(v.manifest, '$.description'), '') || char(10) ||
  coalesce(json_extract(v.manifest, '$.shortDescription'), '') || char(10) ||
  coalesce((SELECT group_concat(t.value, char(10)) FROM json_each(v.manifest, '$.tags') t), '') AS text
FROM upack_versions v WHERE json_valid(v.manifest);

UPDATE upack_packages SET search_text =
  (SELECT text FROM upack_search_texts WHERE version_id = upack_packages.latest_version_id);

CREATE TRIGGER upack_packages_search_text_latest AFTER UPDATE OF latest_version_id ON upack_packages
BEGIN
  UPDATE upack_packages SET search_text = (SELECT text FROM upack_search_texts WHERE version_id = NEW.latest_version_id)
  WHERE id = NEW.id;
END;

CREATE TRIGGER upack_packages_search_text_new AFTER INSERT ON upack_packages WHEN NEW.latest_version_id IS NOT NULL
BEGIN
  UPDATE upack_packages SET search_text = (SELECT text FROM upack_search_texts WHERE version_id = NEW.latest_version_id)
  WHERE id = NEW.id;
END;

CREATE TRIGGER upack_versions_search_text_manifest AFTER UPDATE OF manifest ON upack_versions
BEGIN
  UPDATE upack_packages SET search_text = (SELECT text FROM upack_search_texts WHERE version_id = NEW.id)
  WHERE id = NEW.package_id AND latest_version_id = NEW.id;
END;
