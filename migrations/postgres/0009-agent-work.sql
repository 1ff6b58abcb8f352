-- Cluster mode: work for configuration agents (areas/configuration/agent-hub-cluster.ts). On one
-- machine the queue is in the process's memory; in a cluster the check or remediation that
-- dispatches work runs on one node while the agent holds its poll on another, and posts its log,
-- result and package downloads to any node. So the work is a row: the dispatching node inserts it,
-- the node holding the agent's poll claims it, any node writes the agent's log lines and result
-- into it, and the dispatching node, woken by the change feed, reads them and deletes the row.
-- PostgreSQL only: SQLite's single process keeps its in-memory queue.
CREATE TABLE agent_work (
  -- the work item's id (a UUID), as the agent names it in its requests
  id text COLLATE "C" PRIMARY KEY,
  -- the order work is handed out in
  seq bigint GENERATED ALWAYS AS IDENTITY,
  server_id bigint NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
  -- the WorkItem as the agent receives it, sealed with the cluster's secret key: it holds
  -- sensitive items' content and the merged variables
  sealed_item text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL CHECK (state IN ('queued', 'handed_out', 'finished')),
  -- the agent's lease (WHARF_AGENT_LEASE_SECONDS), on the database's clock: renewed by the agent's
  -- signs of life; lapsed, the work ends failed and the agent's posts about it are refused
  lease_until timestamptz NOT NULL,
  -- the dispatching node's promise that it still waits: renewed while it does; lapsed (the node
  -- died), the work is handed to no agent and any node deletes the row
  wanted_until timestamptz NOT NULL,
  -- log lines posted and not yet read by the dispatching node
  log jsonb NOT NULL DEFAULT '[]',
  -- finished: { "results": [...], "changes": [...] } or { "error": "..." }
  outcome jsonb
);
CREATE INDEX agent_work_queued ON agent_work (server_id, seq) WHERE state = 'queued';
CREATE INDEX agent_work_wanted_until ON agent_work (wanted_until);
-- The triggers wake the nodes: the one holding the agent's poll hears new work, the dispatching
-- one hears log lines and the result. Claims, lease renewals and deletes are quiet writes
-- (nobody waits for them), so a work item notifies about three times, not per renewal.
CREATE TRIGGER wharf_changes AFTER INSERT OR UPDATE OR DELETE ON agent_work
  FOR EACH ROW EXECUTE FUNCTION wharf_notify_change();
CREATE TRIGGER wharf_changes_truncate AFTER TRUNCATE ON agent_work
  FOR EACH STATEMENT EXECUTE FUNCTION wharf_notify_change();
