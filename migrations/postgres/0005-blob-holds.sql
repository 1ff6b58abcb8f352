-- Cluster mode: which blobs uploads on some node are working with, and which one garbage
-- collection is deleting (storage/postgres/blob-holds.ts). PostgreSQL only: on one machine the
-- BlobKeeper's holds are in the one process that uploads and collects. A node records a hold
-- once its upload knows the blob's address and drops it after the row naming the blob committed;
-- collection deletes a blob only when no hold names it, and marks it `deleting` meanwhile, so
-- that an upload of the same bytes waits and then stores its own copy.
CREATE TABLE blob_holds (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  blob_sha256 text COLLATE "C" NOT NULL,
  node_id text COLLATE "C" NOT NULL,
  deleting integer NOT NULL DEFAULT 0 CHECK (deleting IN (0, 1)),
  -- the database's clock; a hold its node never dropped (the node died) stops counting then
  held_until timestamptz NOT NULL
);
CREATE INDEX blob_holds_blob ON blob_holds (blob_sha256);
-- No wharf_changes trigger: no cache reads holds, and every upload writes two.
