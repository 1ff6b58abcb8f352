-- Moves of a feed's blobs to another package store (issue 15 section 4; storage/feed-store-move.ts).
-- Changing a feed's storage setting switches its new uploads at once; with a move, a background
-- mover then copies every blob the feed's rows reference into the new store (verifying each
-- SHA-256), and deletes the copies left in the other stores that no other feed references. One row
-- per feed: the latest move, kept after it finishes so that the API can report it. Every step is
-- idempotent, so a move the process stopped in the middle of (crash, restart) is resumed from its
-- row at the next start.
CREATE TABLE feed_store_moves (
  feed_id INTEGER PRIMARY KEY REFERENCES feeds(id) ON DELETE CASCADE,
  -- store keys (storage/store-factory.ts storeKeyOf: "disk", "s3:...", "azure:..."); they hold no secret
  from_store TEXT NOT NULL,
  to_store TEXT NOT NULL,
  -- copying: blobs go into to_store; deleting: the old copies go; done; failed (see error; a retry
  -- resumes from `cursor`)
  state TEXT NOT NULL CHECK (state IN ('copying', 'deleting', 'done', 'failed')),
  -- the phase a failed move stopped in, so that a retry resumes there
  failed_in TEXT CHECK (failed_in IS NULL OR failed_in IN ('copying', 'deleting')),
  -- the highest blob address the current phase has finished (blobs go in address order); '' = none
  cursor TEXT NOT NULL DEFAULT '',
  blobs_total INTEGER NOT NULL DEFAULT 0,
  blobs_done INTEGER NOT NULL DEFAULT 0,
  bytes_total INTEGER NOT NULL DEFAULT 0,
  bytes_done INTEGER NOT NULL DEFAULT 0,
  -- yyyy-MM-ddTHH:mm:ss.fffZ
  started_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  finished_at TEXT,
  -- why the move failed, as the stores' errors say it (they never carry a secret)
  error TEXT
) STRICT;
CREATE INDEX feed_store_moves_unfinished ON feed_store_moves(state) WHERE state IN ('copying', 'deleting');
