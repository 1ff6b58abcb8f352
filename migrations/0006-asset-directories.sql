-- Asset directories (seed-api.md area F; compat.md 4). An asset directory is a feed of type
-- 'asset'; its tree is one row per file or folder. Every ancestor folder of an item has a row of
-- its own (created implicitly with the item), so that listings are one indexed range read.
CREATE TABLE asset_items (
  id INTEGER PRIMARY KEY,
  feed_id INTEGER NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  -- 'docs/guide.pdf' as its creator spelled it (NFC): no leading or trailing '/', never ''
  path TEXT NOT NULL,
  -- lowercased path: paths match case-insensitively, as in ProGet
  path_key TEXT NOT NULL,
  -- path_key of the parent folder; '' for items in the root
  parent_key TEXT NOT NULL,
  is_folder INTEGER NOT NULL CHECK (is_folder IN (0, 1)),
  -- files: the Content-Type the file was uploaded with; NULL: decided from the extension
  content_type TEXT,
  -- files: the content's address in the blob store and its digests (lowercase hex)
  blob_sha256 TEXT,
  size INTEGER,
  md5 TEXT,
  sha1 TEXT,
  sha512 TEXT,
  -- JSON object: name -> {"value": text, "header": true|false} (compat.md 4.4)
  user_metadata TEXT NOT NULL DEFAULT '{}',
  -- JSON {"type": "NoCache"|"TTL"|"Custom", "value"?}; NULL inherits from the parent folder
  cache_header TEXT,
  -- yyyy-MM-ddTHH:mm:ss.fffZ
  created_at TEXT NOT NULL,
  modified_at TEXT NOT NULL,
  UNIQUE (feed_id, path_key),
  CHECK (
    (is_folder = 1 AND blob_sha256 IS NULL AND size IS NULL)
    OR (is_folder = 0 AND blob_sha256 IS NOT NULL AND size IS NOT NULL AND md5 IS NOT NULL
        AND sha1 IS NOT NULL AND sha512 IS NOT NULL)
  )
) STRICT;
CREATE INDEX asset_items_children ON asset_items(feed_id, parent_key, path_key);
CREATE INDEX asset_items_blob ON asset_items(blob_sha256) WHERE blob_sha256 IS NOT NULL;

-- Multipart uploads in progress (compat.md 4.2): the parts' bytes are written at their offsets
-- into one spool file under <data>/multipart/; these rows say which ranges have arrived.
CREATE TABLE asset_multipart_uploads (
  id INTEGER PRIMARY KEY,
  feed_id INTEGER NOT NULL REFERENCES feeds(id) ON DELETE CASCADE,
  -- the client's id for the upload (pgutil: 32 hex digits; ProGetAutomation: a GUID)
  upload_key TEXT NOT NULL,
  path TEXT NOT NULL,
  path_key TEXT NOT NULL,
  total_size INTEGER NOT NULL CHECK (total_size >= 0),
  total_parts INTEGER NOT NULL CHECK (total_parts >= 1),
  -- file name of the spool under <data>/multipart/
  spool TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  -- when the last part was recorded: an upload is abandoned when this gets old, so that a slow
  -- upload of a huge file is not swept while its parts still arrive
  updated_at TEXT NOT NULL,
  UNIQUE (feed_id, upload_key)
) STRICT;
CREATE INDEX asset_multipart_uploads_activity ON asset_multipart_uploads(updated_at);

-- A row exists only for a part whose bytes are written and fsynced in the spool.
CREATE TABLE asset_multipart_parts (
  upload_id INTEGER NOT NULL REFERENCES asset_multipart_uploads(id) ON DELETE CASCADE,
  part_index INTEGER NOT NULL CHECK (part_index >= 0),
  start_offset INTEGER NOT NULL CHECK (start_offset >= 0),
  size INTEGER NOT NULL CHECK (size >= 0),
  PRIMARY KEY (upload_id, part_index)
) STRICT, WITHOUT ROWID;

-- Every row that keeps a blob alive, in one place: a blob may be deleted only when no row here
-- names it (content addressing lets a package and an asset share one blob). A migration that adds
-- a table referencing blobs must recreate this view with it.
CREATE VIEW blob_references (blob_sha256) AS
  SELECT blob_sha256 FROM upack_versions
  UNION ALL SELECT blob_sha256 FROM upack_assembled
  UNION ALL SELECT blob_sha256 FROM asset_items WHERE blob_sha256 IS NOT NULL;
