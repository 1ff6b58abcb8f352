-- Cluster mode: a blob hold (0005-blob-holds.sql, storage/postgres/blob-holds.ts) taken in one
-- round trip. An upload takes one per blob, so an archive of 2,000 files took 2,000 transactions
-- of five round trips each (BEGIN, lock, SELECT, INSERT, COMMIT); these functions do the same
-- work in one statement.
--
-- Why functions and not one INSERT ... SELECT: in READ COMMITTED a plain statement's snapshot is
-- taken before it waits for the advisory lock, so it would not see a `deleting` mark committed
-- while it waited. A VOLATILE PL/pgSQL function takes a fresh snapshot for each statement inside
-- it, so its check after the lock sees every mark committed before the lock was granted
-- (test/contract/postgres-blob-holds.test.ts holds the lock and commits a mark while a take waits).
--
-- The callers mark nothing quiet: blob_holds has no wharf_changes trigger (0005), so these write
-- nothing any node hears.

-- The blob's advisory lock, until the end of the transaction: collection's mark and an upload's
-- hold take turns on it. One-key form, apart from advisory-locks.ts' two-key ones: the address's
-- first 64 bits.
CREATE FUNCTION wharf_lock_blob(blob text) RETURNS void
LANGUAGE sql VOLATILE STRICT AS $$
  SELECT pg_advisory_xact_lock(('x' || substr(blob, 1, 16))::bit(64)::bigint)
$$;

-- An upload's hold on the blob: its id, or NULL while collection is deleting the blob (the caller
-- waits and tries again).
CREATE FUNCTION wharf_take_blob_hold(blob text, node text, hold_for interval) RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
  hold_id bigint;
BEGIN
  PERFORM wharf_lock_blob(blob);
  IF EXISTS (SELECT 1 FROM blob_holds WHERE blob_sha256 = blob AND held_until > now() AND deleting = 1) THEN
    RETURN NULL;
  END IF;
  INSERT INTO blob_holds (blob_sha256, node_id, held_until) VALUES (blob, node, now() + hold_for)
    RETURNING id INTO hold_id;
  RETURN hold_id;
END
$$;

-- Collection's mark that it is deleting the blob: its id, or NULL when a live hold or a row names
-- the blob (it must stay). Checked under the lock: a row committed by an upload that has since
-- dropped its hold is seen.
CREATE FUNCTION wharf_mark_blob_deleting(blob text, node text, mark_for interval) RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
  mark_id bigint;
BEGIN
  PERFORM wharf_lock_blob(blob);
  IF EXISTS (SELECT 1 FROM blob_holds WHERE blob_sha256 = blob AND held_until > now())
     OR EXISTS (SELECT 1 FROM blob_references WHERE blob_sha256 = blob) THEN
    RETURN NULL;
  END IF;
  INSERT INTO blob_holds (blob_sha256, node_id, deleting, held_until) VALUES (blob, node, 1, now() + mark_for)
    RETURNING id INTO mark_id;
  RETURN mark_id;
END
$$;
