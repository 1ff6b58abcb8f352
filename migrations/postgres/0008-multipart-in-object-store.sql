-- Cluster mode: multipart asset uploads whose parts any node receives (areas/endpoints/multipart/
-- cluster-service.ts). PostgreSQL only: on one machine the parts are written into a spool file on
-- the data directory's disk, and the process itself knows which parts it is receiving.

-- Where each recorded part's bytes are: a blob of the asset directory's package store. One row per
-- row of asset_multipart_parts, written in the same transaction and gone with it.
CREATE TABLE asset_multipart_part_blobs (
  upload_id bigint NOT NULL,
  part_index bigint NOT NULL,
  blob_sha256 text COLLATE "C" NOT NULL,
  PRIMARY KEY (upload_id, part_index),
  FOREIGN KEY (upload_id, part_index) REFERENCES asset_multipart_parts (upload_id, part_index) ON DELETE CASCADE
);
CREATE INDEX asset_multipart_part_blobs_blob ON asset_multipart_part_blobs (blob_sha256);

-- What some node is doing with an upload: receiving a part's bytes (its index and byte range,
-- taken before the bytes are read, so that two nodes never take the same bytes) or, with index -1,
-- completing it. A claim counts until held_until (the database's clock), which its node moves on
-- while it works: a claim of a node that died stops counting on its own.
CREATE TABLE asset_multipart_claims (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  upload_id bigint NOT NULL REFERENCES asset_multipart_uploads (id) ON DELETE CASCADE,
  part_index bigint NOT NULL CHECK (part_index >= -1),
  start_offset bigint NOT NULL CHECK (start_offset >= 0),
  size bigint NOT NULL CHECK (size >= 0),
  held_until timestamptz NOT NULL,
  UNIQUE (upload_id, part_index)
);
-- No wharf_changes triggers (0002) on either table: no cache reads them.

-- A part's blob is referenced while its upload lasts: garbage collection keeps it.
CREATE OR REPLACE VIEW blob_references (blob_sha256) AS
  SELECT blob_sha256 FROM upack_versions
  UNION ALL SELECT blob_sha256 FROM upack_assembled
  UNION ALL SELECT blob_sha256 FROM asset_items WHERE blob_sha256 IS NOT NULL
  UNION ALL SELECT blob_sha256 FROM asset_multipart_part_blobs;
