-- Cluster mode: which node runs each configuration check (config_collections), so that the
-- restart rule ends only the executing checks of nodes that are gone (no cluster_nodes row, or a
-- heartbeat older than a few beats: areas/configuration/collections-repository-postgres.ts) and
-- leaves those other live nodes are running alone.
-- PostgreSQL only: SQLite has one process, whose every executing check at its start is left over
-- from a stop. A table of its own rather than a column of config_collections keeps the two
-- schemas' shared tables alike (test/contract/postgres-schema.test.ts, `wharf cluster import`).
-- A collection without a row here (imported from SQLite, or begun before this migration) has no
-- live node: the rule ends it if it is executing.
CREATE TABLE config_collection_nodes (
  collection_id bigint PRIMARY KEY REFERENCES config_collections (id) ON DELETE CASCADE,
  node_id text NOT NULL
);
-- Written only together with its collection, which notifies anyway: the triggers cost nothing
-- more, and every table keeps them unless it is written every few seconds (0002).
CREATE TRIGGER wharf_changes AFTER INSERT OR UPDATE OR DELETE ON config_collection_nodes
  FOR EACH ROW EXECUTE FUNCTION wharf_notify_change();
CREATE TRIGGER wharf_changes_truncate AFTER TRUNCATE ON config_collection_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION wharf_notify_change();
