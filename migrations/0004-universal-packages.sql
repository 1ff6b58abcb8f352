-- Universal packages (area A). A package is (feed, group, name); a version is one stored .upack.
-- Group and name are matched case-insensitively through the *_key columns (lowercased).

CREATE TABLE upack_packages (
  id INTEGER PRIMARY KEY,
  feed_id INTEGER NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  -- '' is the empty group; spelling as in the most recently uploaded version
  group_name TEXT NOT NULL,
  name TEXT NOT NULL,
  group_key TEXT NOT NULL,
  name_key TEXT NOT NULL,
  -- Denormalised for fast listings (packages at 100k versions): rewritten in the same
  -- transaction as every change to the package's versions.
  latest_version_id INTEGER,
  -- JSON array of version strings, highest first (Inedo.UPack ordering)
  versions_desc TEXT NOT NULL DEFAULT '[]',
  -- sum of the versions' downloads
  downloads INTEGER NOT NULL DEFAULT 0,
  UNIQUE (feed_id, group_key, name_key)
) STRICT;
CREATE INDEX upack_packages_feed_name ON upack_packages(feed_id, name_key);

CREATE TABLE upack_versions (
  id INTEGER PRIMARY KEY,
  package_id INTEGER NOT NULL REFERENCES upack_packages(id) ON DELETE CASCADE,
  -- as written in upack.json (canonical text)
  version TEXT NOT NULL,
  -- lowercased version, for case-insensitive lookup (seed-api.md: matching is case insensitive)
  version_key TEXT NOT NULL,
  -- orders like compareVersions (see domain/upack-version.ts versionSortKey): ORDER BY sort_key DESC = newest first
  sort_key TEXT NOT NULL,
  -- the validated upack.json (manifestToJson), extra properties included
  manifest TEXT NOT NULL,
  -- the stored package file: content address and digests of the bytes as uploaded
  blob_sha256 TEXT NOT NULL,
  sha1 TEXT NOT NULL,
  md5 TEXT,
  sha512 TEXT,
  size INTEGER NOT NULL,
  -- JSON [{ "name", "size", "date" }] of the archive's entries, computed once at upload
  file_list TEXT NOT NULL,
  is_virtual INTEGER NOT NULL CHECK (is_virtual IN (0, 1)),
  -- 1 when the version was pulled from a connector (a later issue); 0 for uploads
  is_cached INTEGER NOT NULL DEFAULT 0 CHECK (is_cached IN (0, 1)),
  downloads INTEGER NOT NULL DEFAULT 0,
  published_at TEXT NOT NULL,
  published_by TEXT,
  UNIQUE (package_id, version_key)
) STRICT;
CREATE INDEX upack_versions_order ON upack_versions(package_id, sort_key);
CREATE INDEX upack_versions_blob ON upack_versions(blob_sha256);
