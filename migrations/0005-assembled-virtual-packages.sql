-- Assembled virtual packages (compat.md 1.6). ProGet keeps the package it assembled from a virtual
-- manifest next to the manifest (a `.constructed` file) and serves it on later downloads; Wharf
-- keeps it as an ordinary blob, and this table says which blob belongs to which virtual version.
-- The row goes with its version (ON DELETE CASCADE); the blob then becomes garbage, so blob
-- garbage collection must count blob_sha256 here as a reference while the row exists.
CREATE TABLE upack_assembled (
  version_id INTEGER PRIMARY KEY REFERENCES upack_versions(id) ON DELETE CASCADE,
  -- the assembled package file: its content address and the digests clients compare (compat.md 1.3)
  blob_sha256 TEXT NOT NULL,
  sha1 TEXT NOT NULL,
  size INTEGER NOT NULL,
  -- yyyy-MM-ddTHH:mm:ss.fffZ
  assembled_at TEXT NOT NULL
) STRICT;
CREATE INDEX upack_assembled_blob ON upack_assembled(blob_sha256);
