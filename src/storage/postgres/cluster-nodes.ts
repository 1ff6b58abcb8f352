import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type pg from "pg";

/**
 * The nodes of a cluster, for the operator's cluster page (migrations/postgres/0003): each running
 * node keeps its row's last_heartbeat_at recent; a row whose heartbeat is older than the page's
 * limit belongs to a node that crashed or lost the database. Every time is the database's now(),
 * so the nodes' clocks may disagree without a live node looking dead.
 */

/** Hostnames are cut to this many characters, leaving room in application_name (63 bytes). */
const HOSTNAME_CHARS = 30;

/**
 * `<hostname>-<6 hex digits>`: the hostname so an operator recognises the machine (in Kubernetes,
 * the pod's name), a random part new for every process so that two processes on one host, or a
 * container restarted under the same hostname, are different nodes: the restarted one gets its own
 * row and start time, and the crashed one's row goes stale instead of being silently taken over.
 */
export function defaultNodeId(host = hostname()): string {
  const name = host.slice(0, HOSTNAME_CHARS) || "wharf";
  return `${name}-${randomBytes(3).toString("hex")}`;
}

export interface NodeRegistrationOptions {
  readonly nodeId: string;
  /** This node's Wharf version: a mixed-version cluster is something the operator must see. */
  readonly version: string;
  /** Where the node itself can be reached, if known. */
  readonly url?: string | null;
  /** How often the row's last_heartbeat_at moves forward (default 10 s). */
  readonly heartbeatMs?: number;
  /** A heartbeat or the final delete failed: reported here, never thrown. */
  readonly onError?: (error: Error) => void;
}

export interface NodeRegistration {
  /** Stops heartbeating and deletes the row (a graceful stop is not a crash). Never rejects. */
  stop(): Promise<void>;
}

/** How often a node's row in cluster_nodes moves forward. */
export const NODE_HEARTBEAT_MS = 10_000;

/**
 * How long a node may stay silent before it counts as gone (the cluster view, the checks' restart
 * rule): three heartbeats, so that one slow or failed heartbeat does not mark a live node dead.
 */
export const goneAfterMs = (heartbeatMs: number) => 3 * heartbeatMs;
/** A node of the default heartbeat silent this long is gone, as the cluster view counts it. */
export const NODE_GONE_AFTER_MS = goneAfterMs(NODE_HEARTBEAT_MS);
/**
 * How long one statement of a heartbeat or of stop() may take. Without a bound, a database cut
 * off mid-statement would keep stop() (and so the node's shutdown) waiting for TCP to give up.
 */
const STATEMENT_TIMEOUT_MS = 5_000;

/** pg honours query_timeout per statement too, though its types list it only for the connection. */
type TimedQuery = pg.QueryConfig & { readonly query_timeout: number };

const timed = (text: string, values: unknown[]): TimedQuery => ({
  text,
  values,
  query_timeout: STATEMENT_TIMEOUT_MS,
});

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** A restart under the same id starts afresh: new start time, version and URL. */
const REGISTER = `
  INSERT INTO cluster_nodes (node_id, version, url, started_at, last_heartbeat_at)
  VALUES ($1, $2, $3, now(), now())
  ON CONFLICT (node_id) DO UPDATE
    SET version = EXCLUDED.version, url = EXCLUDED.url, started_at = now(), last_heartbeat_at = now()`;

/**
 * Also puts the row back if it went missing (an operator removed it from the cluster page while
 * the node was still running), keeping started_at when it is there. cluster_nodes has no
 * wharf_changes trigger (0003), so heartbeats never empty other nodes' caches.
 */
const HEARTBEAT = `
  INSERT INTO cluster_nodes (node_id, version, url, started_at, last_heartbeat_at)
  VALUES ($1, $2, $3, now(), now())
  ON CONFLICT (node_id) DO UPDATE SET last_heartbeat_at = now()`;

/**
 * Registers this node and keeps its heartbeat going. The first write is awaited and throws (a node
 * that cannot write its row at start cannot serve either); later failures go to onError, and the
 * heartbeat keeps trying. The timer never keeps the process alive by itself.
 */
export async function registerNode(pool: pg.Pool, options: NodeRegistrationOptions): Promise<NodeRegistration> {
  const heartbeatMs = options.heartbeatMs ?? NODE_HEARTBEAT_MS;
  const values = [options.nodeId, options.version, options.url ?? null];
  const report = (error: unknown) => {
    try {
      options.onError?.(asError(error));
    } catch {
      // A failing error handler must not take the process down either.
    }
  };
  await pool.query(REGISTER, values);

  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  /** The heartbeat in flight: stop() waits for it, so that it cannot put the row back afterwards. */
  let beating: Promise<void> = Promise.resolve();

  // One heartbeat at a time: the next is scheduled when the last one ended, however slow it was.
  const schedule = () => {
    timer = setTimeout(() => {
      beating = pool
        .query(timed(HEARTBEAT, values))
        .then(() => {}, report)
        .finally(() => {
          if (!stopped) schedule();
        });
    }, heartbeatMs);
    timer.unref();
  };
  schedule();

  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= (async () => {
        stopped = true;
        clearTimeout(timer);
        await beating;
        try {
          await pool.query(timed("DELETE FROM cluster_nodes WHERE node_id = $1", [options.nodeId]));
        } catch (error) {
          // The row stays and reads as not alive once its heartbeat is old enough: harmless.
          report(error);
        }
      })();
      return stopping;
    },
  };
}

export interface ClusterNode {
  readonly nodeId: string;
  readonly version: string;
  readonly url: string | null;
  /** ISO 8601, UTC. */
  readonly startedAt: string;
  /** ISO 8601, UTC. */
  readonly lastHeartbeatAt: string;
  /** By the database's clock. */
  readonly secondsSinceHeartbeat: number;
  /** Heartbeat within staleAfterMs, by the database's clock. */
  readonly alive: boolean;
}

interface ClusterNodeRow {
  node_id: string;
  version: string;
  url: string | null;
  started_at: Date;
  last_heartbeat_at: Date;
  seconds_since_heartbeat: number;
  alive: boolean;
}

/** Every registered node, oldest first; alive when heard from within staleAfterMs (goneAfterMs). */
export async function listClusterNodes(pool: pg.Pool, options: { staleAfterMs: number }): Promise<ClusterNode[]> {
  const result = await pool.query<ClusterNodeRow>(
    `SELECT node_id, version, url, started_at, last_heartbeat_at,
            extract(epoch FROM now() - last_heartbeat_at)::float8 AS seconds_since_heartbeat,
            last_heartbeat_at > now() - make_interval(secs => $1::float8 / 1000) AS alive
       FROM cluster_nodes
      ORDER BY started_at, node_id`,
    [options.staleAfterMs],
  );
  return result.rows.map((row) => ({
    nodeId: row.node_id,
    version: row.version,
    url: row.url,
    startedAt: row.started_at.toISOString(),
    lastHeartbeatAt: row.last_heartbeat_at.toISOString(),
    secondsSinceHeartbeat: row.seconds_since_heartbeat,
    alive: row.alive,
  }));
}
