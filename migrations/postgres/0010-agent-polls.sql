-- Cluster mode: which poll holds each agent server's connection (areas/configuration/
-- agent-poll-holds-postgres.ts). One poll per server at a time, so that two agents started with
-- one key are noticed (409 AGENT_ALREADY_CONNECTED): on one machine the hub's memory knows the
-- held polls; in a cluster the agents may poll different nodes, so the hold is a row, taken
-- atomically (INSERT ... ON CONFLICT ... WHERE lapsed) and deleted when the poll ends.
-- PostgreSQL only: SQLite's single process keeps its held polls in memory.
CREATE TABLE agent_polls (
  server_id bigint PRIMARY KEY REFERENCES servers (id) ON DELETE CASCADE,
  -- the cluster node holding the poll (cluster_nodes.node_id), for the operator
  node_id text COLLATE "C" NOT NULL,
  -- the held poll (a UUID new for each): only its node renews or deletes the row
  poll_id text COLLATE "C" NOT NULL,
  -- renewed every few seconds while the poll is held, on the database's clock: a node that died
  -- stops renewing, and once this passed another poll of the server takes the row over
  held_until timestamptz NOT NULL
);
-- No wharf_changes triggers (0002): no cache reads it, and it is renewed every few seconds.
