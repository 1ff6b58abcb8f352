-- The nodes of a cluster (PostgreSQL only: a single SQLite node has no cluster to list).
-- Each node inserts its row at start, moves last_heartbeat_at forward while it runs and deletes the
-- row when it stops gracefully; a node that crashed keeps its row, which reads as not alive once
-- its heartbeat is older than the page's limit. Times are the database's now(), never a node's
-- clock, so that skew between the nodes' clocks cannot make a live node look dead.
CREATE TABLE cluster_nodes (
  node_id text PRIMARY KEY,
  version text NOT NULL,
  -- Where the node itself can be reached (its own address behind the load balancer), if known.
  url text NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_heartbeat_at timestamptz NOT NULL DEFAULT now()
);
-- No wharf_changes triggers (0002): no cache reads this table, and every node's heartbeat would
-- otherwise empty every node's caches every few seconds. The table is in the list of exceptions
-- of test/contract/postgres-change-feed.test.ts.
