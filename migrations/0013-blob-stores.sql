-- Package stores other than the data directory's disk store (issue 15): every S3 bucket or Azure
-- container that a feed's storage setting or the server default has named, by the location its
-- blobs go to (storage/store-factory.ts storeKeyOf). A store stays here after no feed names it any
-- more: blobs written there stay readable (a feed changed to "new uploads only" keeps its old
-- versions there), and garbage collection keeps collecting it. The disk store is always present and
-- has no row.
CREATE TABLE blob_stores (
  key TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('s3', 'azure')),
  -- the latest FeedStorageConfiguration JSON used for it, secrets sealed (storage/storage-secrets.ts)
  config TEXT NOT NULL,
  first_used_at TEXT NOT NULL,
  last_used_at TEXT NOT NULL
) STRICT;
