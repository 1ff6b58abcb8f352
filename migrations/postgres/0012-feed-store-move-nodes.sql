-- Cluster mode: which node runs each feed store move (feed_store_moves), so that a move whose node
-- stopped is taken over by the leading node (storage/feed-store-move-repository-postgres.ts), and
-- a move another live node runs is left to it. Before, the leader resumed every unfinished move as
-- it took the lead (one asked of a node that then stopped waited for the next change of leader),
-- and could run one a live node was running too.
-- PostgreSQL only, as config_collection_nodes (0007): SQLite has one process, whose every
-- unfinished move at its start is its own to resume. A move without a row here (imported from
-- SQLite, or begun before this migration) has no live node: the leader takes it over.
CREATE TABLE feed_store_move_nodes (
  feed_id bigint PRIMARY KEY REFERENCES feed_store_moves (feed_id) ON DELETE CASCADE,
  node_id text NOT NULL
);
-- Written only together with its move's row, which notifies anyway.
CREATE TRIGGER wharf_changes AFTER INSERT OR UPDATE OR DELETE ON feed_store_move_nodes
  FOR EACH ROW EXECUTE FUNCTION wharf_notify_change();
CREATE TRIGGER wharf_changes_truncate AFTER TRUNCATE ON feed_store_move_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION wharf_notify_change();
