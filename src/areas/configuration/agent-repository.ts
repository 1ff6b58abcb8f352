import type { Db } from "../../storage/database.js";

/**
 * The SQL of the agent protocol (migration 0011 `servers`): finding a server by its agent key's
 * hash, and recording when its agent was last seen and which version it runs. Single statements;
 * the hub throttles the writes. Asynchronous (PostgreSQL in cluster mode: agent-repository-postgres.ts);
 * on SQLite each method is still one synchronous statement (WAL: reads never wait), and `getNow`
 * is reachable synchronously (SqliteAgentRepository) so that the hub queues work within the call.
 */
export interface AgentServerRow {
  readonly id: number;
  readonly name: string;
  readonly active: boolean;
  /** False once the key was revoked (agent_key_hash NULL) or never issued. */
  readonly hasKey: boolean;
  /** The current key's hash: a held poll whose key is no longer it ends (revoked, or replaced by a new key). */
  readonly keyHash: string | undefined;
  /** ISO date of the last recorded poll; undefined when the agent never connected. */
  readonly lastSeenAt: string | undefined;
}

export interface AgentRepository {
  /** The `agent` server whose current key hashes to `keyHash`; undefined for a revoked or unknown key. */
  findByKeyHash(keyHash: string): Promise<AgentServerRow | undefined>;
  /** The server as its agent's work needs it now (revoked, deactivated or deleted meanwhile). */
  get(serverId: number): Promise<AgentServerRow | undefined>;
  /** Not a quiet write: the status reads agent_last_seen_at (an agent's going offline). */
  recordSeen(serverId: number, seenAt: string, version: string | undefined): Promise<void>;
}

/** On SQLite a server is also read synchronously: the hub queues work in the call that hands it over. */
export interface SqliteAgentRepository extends AgentRepository {
  getNow(serverId: number): AgentServerRow | undefined;
}

export interface AgentRow {
  id: number;
  name: string;
  active: number;
  agent_key_hash: string | null;
  agent_last_seen_at: string | null;
}

export const AGENT_COLUMNS = "id, name, active, agent_key_hash, agent_last_seen_at";

export function toAgentServer(row: AgentRow | undefined): AgentServerRow | undefined {
  if (row === undefined) return undefined;
  return {
    id: row.id,
    name: row.name,
    active: row.active === 1,
    hasKey: row.agent_key_hash !== null,
    keyHash: row.agent_key_hash ?? undefined,
    lastSeenAt: row.agent_last_seen_at ?? undefined,
  };
}

export function createAgentRepository(db: Db): SqliteAgentRepository {
  const byHash = db.prepare<[string], AgentRow>(
    `SELECT ${AGENT_COLUMNS} FROM servers WHERE agent_key_hash = ? AND server_type = 'agent'`,
  );
  const byId = db.prepare<[number], AgentRow>(
    `SELECT ${AGENT_COLUMNS} FROM servers WHERE id = ? AND server_type = 'agent'`,
  );
  const seen = db.prepare<[string, string | null, number]>(
    "UPDATE servers SET agent_last_seen_at = ?, agent_version = coalesce(?, agent_version) WHERE id = ?",
  );
  const getNow = (serverId: number) => toAgentServer(byId.get(serverId));
  return {
    getNow,
    findByKeyHash: async (keyHash) => toAgentServer(byHash.get(keyHash)),
    get: async (serverId) => getNow(serverId),
    async recordSeen(serverId, seenAt, version) {
      seen.run(seenAt, version ?? null, serverId);
    },
  };
}
