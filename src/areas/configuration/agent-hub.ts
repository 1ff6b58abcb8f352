import type { LogLine, WorkItem, WorkResult } from "../../agent/protocol.js";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { SecretBox } from "../../storage/secrets.js";
import { createClusterAgentHub } from "./agent-hub-cluster.js";
import { createMemoryAgentHub } from "./agent-hub-memory.js";
import type { AgentServerRow } from "./agent-repository.js";
import type { ServerTransport } from "./transport.js";

/**
 * The server's side of the agent protocol (issue 13 section 3): work for `agent` servers waits
 * here until the server's agent long-polls for it, and the check or remediation that queued it
 * waits for the agent's result. On one machine (SQLite) the queue is the process's memory
 * (agent-hub-memory.ts); nothing of it survives a restart (the checker ends executing collections
 * found at start, the job runner retries its jobs). In a cluster it is a table (agent-hub-cluster.ts).
 *
 * Rules:
 * - One poll per server at a time: a second connection with the same key while one is held is
 *   refused (409 AGENT_ALREADY_CONNECTED), so two agents started with one key take no work twice
 *   and the one holding its poll keeps the server (the other retries with backoff).
 * - An agent not seen for `agentOfflineMs` (no poll held, none within that time) gets no work:
 *   the check fails at once with "has not been seen since <date>".
 * - Work not finished within `agentLeaseMs` of the agent's last sign of life about it (handed out,
 *   a log post, a package download) fails: the agent died or lost its connection. Work not handed
 *   out yet (the agent is busy with other work, one item at a time) lives as long as the agent does.
 * - A revoked key finds no server (403); an inactive server's work is refused at once.
 *
 * Cluster mode (PostgreSQL): work dispatched on any node reaches the agent on whichever node it
 * polls, and its log, result and downloads may be posted to any node, with the same rules: the
 * agent counts as seen when any node saw it (servers.agent_last_seen_at), leases run on the
 * database's clock, and a key revoked through any node ends the poll held on another. One poll per
 * server holds across the nodes: the held poll is a row (agent_polls), which a poll on another node
 * finds and is refused by, until the poll ends or its node stops renewing the row (it died).
 */
export interface AgentHubDeps {
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Pick<Config, "agentLeaseMs" | "agentOfflineMs">;
  /** Seals work items while they wait in a cluster's database (sensitive items' content, variables): required there. */
  readonly secrets?: SecretBox;
  /** A cluster node's change feed (every committed write's table): wakes held polls and waiting dispatches. */
  readonly onChange?: (listener: (table: string) => void) => () => void;
  /** This cluster node's id (cluster_nodes.node_id), recorded with the polls it holds. */
  readonly nodeId?: string;
}

/** The server an agent key belongs to, as the protocol's routes see it. */
export type AgentServer = AgentServerRow;

/** A package item of a work item, which the agent may resolve and download (and no other package). */
export interface WorkPackage {
  readonly feed: string;
  /** "" for no group. */
  readonly group: string;
  readonly name: string;
  /** Exact, or `latest`. */
  readonly version: string;
}

export interface AgentHub {
  /** The ServerTransport for `agent` servers: hands the items to the server's agent and waits for its result. */
  readonly transport: ServerTransport;
  /** The agent server whose current key this is; undefined for an unknown or revoked key. */
  identify(key: string): Promise<AgentServer | undefined>;
  /** Records a sign of life of the server's agent (servers.agent_last_seen_at, agent_version), at most every few seconds. */
  seen(server: AgentServer, version: string | undefined): void;
  /**
   * The work queued for the server, at once if there is some, else whatever comes within `waitMs`
   * (empty when nothing did, or `signal` aborted); `revoked` when the key was revoked or replaced
   * while the poll was held. Throws conflict while another poll of the server is held.
   */
  poll(
    server: AgentServer,
    options: { waitMs: number; version: string | undefined; signal: AbortSignal },
  ): Promise<WorkItem[] | "revoked">;
  /** Forwards log lines to the job or check waiting for the work, and renews its lease (no lines: a heartbeat). */
  log(server: AgentServer, workId: string, lines: readonly LogLine[]): Promise<void> | void;
  /** The agent's result: settles the check or remediation waiting for it. */
  complete(server: AgentServer, workId: string, result: WorkResult): Promise<void> | void;
  /**
   * The package item `itemKey` of the work, renewing its lease; throws not found for any other.
   * On one machine these three answer synchronously (the work is in memory); in a cluster they
   * read and write the work's row.
   */
  workPackage(server: AgentServer, workId: string, itemKey: string): Promise<WorkPackage> | WorkPackage;
  /** Whether the server's agent holds a poll right now. */
  isPolling(serverId: number): boolean;
  /** Answers every held poll (empty) and fails every waiting work item: called when Wharf closes. */
  close(): void;
}

export function createAgentHub(deps: AgentHubDeps): AgentHub {
  const { clock, config } = deps;
  return byDatabase<AgentHub>(
    deps.db,
    (db) => createMemoryAgentHub({ db, clock, config }),
    (db) => {
      // A programming error, not an operator's: index.ts always passes the node's secret box.
      if (deps.secrets === undefined) throw new Error("a cluster's agent hub needs the secret box");
      return createClusterAgentHub({
        db,
        clock,
        config,
        secrets: deps.secrets,
        ...(deps.onChange === undefined ? {} : { onChange: deps.onChange }),
        ...(deps.nodeId === undefined ? {} : { nodeId: deps.nodeId }),
      });
    },
  );
}
