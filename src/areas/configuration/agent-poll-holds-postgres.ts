import type { PostgresDb } from "../../storage/postgres/database.js";

/**
 * Which poll holds each agent server in a cluster (migrations/postgres/0010-agent-polls.sql), for
 * agent-hub-cluster.ts: one poll per server across the nodes, as the memory hub keeps it on one
 * machine. A hold counts until held_until, on the database's clock: its node renews it while the
 * poll is held and deletes it when the poll ends, and a node that died stops renewing, so its
 * holds lapse on their own. PostgreSQL only. No cache reads the table: the writes notify nobody
 * (it has no wharf_changes triggers).
 */
export interface AgentPollHolds {
  /**
   * Takes the server for the poll `pollId` of node `nodeId` for `holdSeconds`; false while another
   * poll's hold has not lapsed. Atomic: of two polls taking the server at once, one gets it.
   */
  take(serverId: number, nodeId: string, pollId: string, holdSeconds: number): Promise<boolean>;
  /**
   * Renews the holds of these polls (each `[serverId, pollId]`) for `holdSeconds`; returns the
   * servers still held, leaving out any whose hold another poll took over (it had lapsed).
   */
  renew(held: readonly (readonly [number, string])[], holdSeconds: number): Promise<Set<number>>;
  /** Ends the poll's hold, if it still has it: the server can be taken at once. */
  release(serverId: number, pollId: string): Promise<void>;
}

const HELD_UNTIL = (placeholder: string) => `now() + make_interval(secs => ${placeholder})`;

// The conflict's WHERE sees the row as last committed: two takes at once queue on the row, and
// the second finds the first's live hold, so it neither inserts nor updates.
const TAKE = `INSERT INTO agent_polls (server_id, node_id, poll_id, held_until)
  VALUES ($1, $2, $3, ${HELD_UNTIL("$4")})
  ON CONFLICT (server_id) DO UPDATE
    SET node_id = excluded.node_id, poll_id = excluded.poll_id, held_until = excluded.held_until
    WHERE agent_polls.held_until < now()`;

// A lapsed hold nobody took over is still the poll's: renewed all the same.
const RENEW = `UPDATE agent_polls SET held_until = ${HELD_UNTIL("$3")}
  FROM unnest($1::bigint[], $2::text[]) AS held (server_id, poll_id)
  WHERE agent_polls.server_id = held.server_id AND agent_polls.poll_id = held.poll_id
  RETURNING agent_polls.server_id`;

const RELEASE = "DELETE FROM agent_polls WHERE server_id = $1 AND poll_id = $2";

export function createPostgresAgentPollHolds(db: PostgresDb): AgentPollHolds {
  return {
    async take(serverId, nodeId, pollId, holdSeconds) {
      return (await db.pool.query(TAKE, [serverId, nodeId, pollId, holdSeconds])).rowCount === 1;
    },

    async renew(held, holdSeconds) {
      if (held.length === 0) return new Set();
      const renewed = await db.pool.query<{ server_id: number }>(RENEW, [
        held.map(([serverId]) => serverId),
        held.map(([, pollId]) => pollId),
        holdSeconds,
      ]);
      return new Set(renewed.rows.map((row) => Number(row.server_id)));
    },

    async release(serverId, pollId) {
      await db.pool.query(RELEASE, [serverId, pollId]);
    },
  };
}
