import type { Db } from "../../storage/database.js";

/**
 * The SQL of the agent protocol (migration 0011 `servers`): finding a server by its agent key's
 * hash, and recording when its agent was last seen and which version it runs. Synchronous single
 * statements (WAL: reads never wait); the hub throttles the writes.
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
  findByKeyHash(keyHash: string): AgentServerRow | undefined;
  /** The server as its agent's work needs it now (revoked, deactivated or deleted meanwhile). */
  get(serverId: number): AgentServerRow | undefined;
  recordSeen(serverId: number, seenAt: string, version: string | undefined): void;
}

interface Row {
  id: number;
  name: string;
  active: number;
  agent_key_hash: string | null;
  agent_last_seen_at: string | null;
}

const COLUMNS = "id, name, active, agent_key_hash, agent_last_seen_at";

function toServer(row: Row | undefined): AgentServerRow | undefined {
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

export function createAgentRepository(db: Db): AgentRepository {
  const byHash = db.prepare<[string], Row>(
    `SELECT ${COLUMNS} FROM servers WHERE agent_key_hash = ? AND server_type = 'agent'`,
  );
  const byId = db.prepare<[number], Row>(`SELECT ${COLUMNS} FROM servers WHERE id = ? AND server_type = 'agent'`);
  const seen = db.prepare<[string, string | null, number]>(
    "UPDATE servers SET agent_last_seen_at = ?, agent_version = coalesce(?, agent_version) WHERE id = ?",
  );
  return {
    findByKeyHash: (keyHash) => toServer(byHash.get(keyHash)),
    get: (serverId) => toServer(byId.get(serverId)),
    recordSeen(serverId, seenAt, version) {
      seen.run(seenAt, version ?? null, serverId);
    },
  };
}
