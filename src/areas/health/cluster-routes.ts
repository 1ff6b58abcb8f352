import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { AccessNeed } from "../../domain/principal.js";
import { errorText } from "../../http/errors.js";
import { isPostgres, type MetadataDb } from "../../storage/metadata-db.js";
import { type ClusterNode, goneAfterMs, listClusterNodes } from "../../storage/postgres/cluster-nodes.js";
import { ADVISORY_LOCKS, WHARF_LOCK_SPACE } from "../../storage/postgres/advisory-locks.js";
import { leaseApplicationName } from "../../storage/postgres/leadership.js";
import { WHARF_VERSION } from "../../version.js";

/** Full-control System keys; users and personal keys with Admin_ConfigureProGet (as /api/storage/gc). */
const ADMINISTER: AccessNeed = { api: "full-control", attribute: "Admin_ConfigureProGet" };

const nodeSchema = z.object({
  nodeId: z.string(),
  version: z.string(),
  url: z.string().nullable(),
  startedAt: z.string(),
  lastHeartbeatAt: z.string(),
  secondsSinceHeartbeat: z.number(),
  alive: z.boolean(),
  /** Holds the scheduler's lease: retention, checks, connector health and garbage collection run there. */
  runsSchedulers: z.boolean(),
  /** The node that answered this request. */
  self: z.boolean(),
});

const clusterSchema = z.object({
  database: z.enum(["SQLite", "PostgreSQL"]),
  nodes: z.array(nodeSchema),
});

export type ClusterView = z.infer<typeof clusterSchema>;

export interface ClusterViewDeps {
  readonly db: MetadataDb;
  readonly nodeId: string;
  /** When this process started (one machine: its own row). */
  readonly startedAt: Date;
  /** How often nodes heartbeat: a node silent for three of them is shown as not alive. */
  readonly heartbeatMs: number;
}

/** The cluster's nodes, oldest first (one machine: this process alone). */
export async function clusterView(deps: ClusterViewDeps): Promise<ClusterView> {
  if (!isPostgres(deps.db)) {
    const now = new Date().toISOString();
    return {
      database: "SQLite",
      nodes: [
        {
          nodeId: deps.nodeId,
          version: WHARF_VERSION,
          url: null,
          startedAt: deps.startedAt.toISOString(),
          lastHeartbeatAt: now,
          secondsSinceHeartbeat: 0,
          alive: true,
          runsSchedulers: true,
          self: true,
        },
      ],
    };
  }
  const nodes: ClusterNode[] = await listClusterNodes(deps.db.pool, { staleAfterMs: goneAfterMs(deps.heartbeatMs) });
  // The session holding the scheduler's advisory lock (two-key form: classid, objid; objsubid 2),
  // named by the node that opened it (leadership.ts); a standby node's session waits without it.
  const leaders = await deps.db.pool.query<{ name: string }>(
    `SELECT a.application_name AS name
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
        AND l.classid = ($1::bigint)::oid AND l.objid = ($2::bigint)::oid`,
    [WHARF_LOCK_SPACE, ADVISORY_LOCKS.scheduler],
  );
  const leading = new Set(leaders.rows.map((row) => row.name));
  return {
    database: "PostgreSQL",
    nodes: nodes.map((node) => ({
      ...node,
      runsSchedulers: leading.has(leaseApplicationName(node.nodeId, "scheduler")),
      self: node.nodeId === deps.nodeId,
    })),
  };
}

/** `GET /api/cluster/nodes`: the nodes with their version and last heartbeat, for administrators. */
export const clusterRoutes: FastifyPluginAsync<ClusterViewDeps> = async (app, deps) => {
  app.withTypeProvider<ZodTypeProvider>().get(
    "/api/cluster/nodes",
    {
      schema: {
        summary: "The nodes of this Wharf (cluster mode: every node on the shared database)",
        tags: ["health"],
        response: { 200: clusterSchema, 401: errorText, 403: errorText },
      },
      config: { access: { need: ADMINISTER } },
    },
    async () => clusterView(deps),
  );
};
