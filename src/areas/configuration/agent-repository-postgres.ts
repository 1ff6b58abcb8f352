import { type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { AGENT_COLUMNS, type AgentRepository, type AgentRow, toAgentServer } from "./agent-repository.js";

/**
 * AgentRepository on PostgreSQL (cluster mode): the same single statements as on SQLite. An agent
 * polls one node at a time, but its posts may reach any node: recordSeen is a plain UPDATE (the
 * later of two nodes' writes wins, both "now"), as any node may record it.
 */
export function createPostgresAgentRepository(db: PostgresDb): AgentRepository {
  const one = async (sql: string, params: readonly unknown[]) =>
    toAgentServer((await readRows<AgentRow>(db, sql, params))[0]);
  return {
    findByKeyHash: (keyHash) =>
      one(`SELECT ${AGENT_COLUMNS} FROM servers WHERE agent_key_hash = $1 AND server_type = 'agent'`, [keyHash]),
    get: (serverId) => one(`SELECT ${AGENT_COLUMNS} FROM servers WHERE id = $1 AND server_type = 'agent'`, [serverId]),
    async recordSeen(serverId, seenAt, version) {
      await writeRows(
        db,
        "UPDATE servers SET agent_last_seen_at = $1, agent_version = coalesce($2, agent_version) WHERE id = $3",
        [seenAt, version ?? null, serverId],
      );
    },
  };
}
