-- Cross-node cache invalidation (research: next-areas.md 4.4). Every write to a table sends
-- NOTIFY wharf_changes, '<table name>'; each node LISTENs on one connection and moves its
-- ChangeWatch version (src/storage/postgres/change-feed.ts), so that a node's caches drop what
-- another node, the CLI or an administrator's psql changed.
--
-- NOTIFY is transactional, which is what makes it fit: it is delivered at COMMIT, never for work
-- that rolled back, and the same (channel, payload) sent twice in one transaction arrives once,
-- so a transaction touching three tables sends at most three notifications however many rows
-- (PostgreSQL finds the duplicates by hash: a row-level call costs little).
-- The payload is only the table's name: enough for a later, finer invalidation, and far below
-- NOTIFY's 8000-byte limit.

-- Quiet writes are those no cache depends on (download counters, last-used times): the
-- transaction says so with set_config('wharf.quiet', 'on', true), which lasts until its end
-- (the PostgreSQL form of ChangeWatch.quietly). current_setting(..., true) is NULL when the
-- setting was never made in this session and '' after an earlier quiet transaction ended.
CREATE FUNCTION wharf_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('wharf.quiet', true) IS DISTINCT FROM 'on' THEN
    PERFORM pg_notify('wharf_changes', TG_TABLE_NAME);
  END IF;
  RETURN NULL;
END
$$;

-- Per row, not per statement: a statement that changes nothing must not notify, or every idle
-- poll of every node (a job claim that finds no job, an UPDATE ... WHERE matching nothing) would
-- empty every cache of the cluster each time. TRUNCATE triggers exist only per statement: a
-- second trigger covers it.
--
-- Every table that exists now gets both. EVERY LATER MIGRATION THAT CREATES A TABLE MUST ATTACH
-- THEM TOO, or writes to that table will not invalidate other nodes' caches
-- (test/contract/postgres-change-feed.test.ts checks every table of the migrated schema):
--
--   CREATE TRIGGER wharf_changes AFTER INSERT OR UPDATE OR DELETE ON <table>
--     FOR EACH ROW EXECUTE FUNCTION wharf_notify_change();
--   CREATE TRIGGER wharf_changes_truncate AFTER TRUNCATE ON <table>
--     FOR EACH STATEMENT EXECUTE FUNCTION wharf_notify_change();
--
-- Left out, in that test's list of exceptions with the reason: wharf_schema_migrations (only
-- migrations write it, and every node refuses a schema other than its own anyway), and tables no
-- cache reads that are written every few seconds (heartbeats, job leases).
DO $$
DECLARE
  t record;
BEGIN
  FOR t IN
    SELECT tablename FROM pg_tables
    WHERE schemaname = current_schema() AND tablename <> 'wharf_schema_migrations'
  LOOP
    EXECUTE format(
      'CREATE TRIGGER wharf_changes AFTER INSERT OR UPDATE OR DELETE ON %I '
      || 'FOR EACH ROW EXECUTE FUNCTION wharf_notify_change()',
      t.tablename
    );
    EXECUTE format(
      'CREATE TRIGGER wharf_changes_truncate AFTER TRUNCATE ON %I '
      || 'FOR EACH STATEMENT EXECUTE FUNCTION wharf_notify_change()',
      t.tablename
    );
  END LOOP;
END
$$;
