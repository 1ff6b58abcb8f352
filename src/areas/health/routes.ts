import type { FastifyPluginAsync, FastifyReply } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { databaseUsable, isPostgres, type MetadataDb } from "../../storage/metadata-db.js";
import type { DiskSpace, DiskStatus } from "../../storage/disk-space.js";
import { WHARF_VERSION } from "../../version.js";

const healthSchema = z.object({
  applicationName: z.string(),
  databaseStatus: z.enum(["OK", "Error"]),
  databaseStatusDetails: z.string().optional(),
  licenseStatus: z.enum(["OK", "Error"]),
  licenseStatusDetail: z.string().optional(),
  versionNumber: z.string(),
  releaseNumber: z.string(),
  serviceStatus: z.enum(["OK", "Error"]),
  serviceStatusDetail: z.string().optional(),
  extensionsInstalled: z.record(z.string(), z.string()),
  disk: z
    .object({
      status: z.enum(["OK", "Low", "Unknown"]),
      freeBytes: z.number().optional(),
      thresholdBytes: z.number(),
      detail: z.string().optional(),
    })
    .describe("Wharf extension: free space where the data directory is; Low: uploads are refused (507)"),
  packageStores: z
    .object({ status: z.enum(["OK", "Error"]), detail: z.string().optional() })
    .describe(
      "Wharf extension: whether every package store (the disk, S3 and Azure stores feeds use) answers; checked at most every few seconds",
    ),
  node: z
    .object({
      id: z.string(),
      database: z.enum(["SQLite", "PostgreSQL"]),
      changeFeed: z.enum(["OK", "Error"]).optional(),
    })
    .describe(
      "Wharf extension: which node answered (cluster mode: docs/cluster-mode.md), its metadata database, and whether it hears other nodes' changes (Error: its caches are bypassed until it does)",
    ),
});

/** This node, as /health describes it. */
export interface NodeHealth {
  readonly id: string;
  /** Whether the node hears every other node's commits (cluster mode's change feed); absent on one machine. */
  readonly changeFeedListening?: () => boolean;
}

/** Low disk space is a warning, not an error: reads and deletes (which free space) still work. */
function diskHealth({ freeBytes, requiredBytes, low }: DiskStatus): z.infer<typeof healthSchema>["disk"] {
  if (freeBytes === undefined) return { status: "Unknown", thresholdBytes: requiredBytes };
  if (!low) return { status: "OK", freeBytes, thresholdBytes: requiredBytes };
  const detail =
    freeBytes === 0
      ? "The disk is full: uploads are refused."
      : `Only ${freeBytes} bytes are free, below the ${requiredBytes} uploads need: uploads are refused.`;
  return { status: "Low", freeBytes, thresholdBytes: requiredBytes, detail };
}

/**
 * `/health` answers JSON on every spelling (docs/compat.md 0.5: pgutil requires the five status and
 * version members); `/api/version` answers text starting with "ProGet" (the Jenkins plugin checks it).
 */
/** How long a package stores' answer stands: load balancers ask /health every few seconds, each of them. */
const STORES_CHECK_MS = 5_000;

/**
 * The package stores' state for /health: `probe` asks every store (an object store's answer is a
 * round trip), at most once per STORES_CHECK_MS whatever the number of callers.
 */
function storesHealth(
  probe: () => Promise<void>,
  log: { warn(fields: object, message: string): void },
): () => Promise<z.infer<typeof healthSchema>["packageStores"]> {
  let checked: { at: number; answer: Promise<z.infer<typeof healthSchema>["packageStores"]> } | undefined;
  return () => {
    if (checked === undefined || performance.now() - checked.at >= STORES_CHECK_MS) {
      checked = {
        at: performance.now(),
        answer: probe().then(
          () => ({ status: "OK" }) as const,
          (error: unknown) => {
            // /health answers anyone: the reason (a store's host, bucket, account) goes to the log only.
            log.warn({ err: error }, "a package store does not answer /health's probe");
            return {
              status: "Error" as const,
              detail: "A package store does not answer: the server's log says which, and why.",
            };
          },
        ),
      };
    }
    return checked.answer;
  };
}

export const healthRoutes: FastifyPluginAsync<{
  db: MetadataDb;
  disk: DiskSpace;
  node: NodeHealth;
  /** Asks every package store something cheap; rejects when one fails. */
  probeStores: () => Promise<void>;
}> = async (app, { db, disk, node, probeStores }) => {
  const stores = storesHealth(probeStores, app.log);
  const api = app.withTypeProvider<ZodTypeProvider>();
  const health = {
    schema: {
      summary: "Server health (JSON, no key needed)",
      tags: ["health"],
      querystring: z.object({ format: z.string().optional() }).loose(),
      response: { 200: healthSchema, 500: healthSchema },
    },
    config: { access: { public: true } },
  } as const;

  const handler = async (_request: unknown, reply: FastifyReply) => {
    const databaseOk = await databaseUsable(db);
    const listening = node.changeFeedListening?.();
    const body: z.infer<typeof healthSchema> = {
      applicationName: "Wharf",
      databaseStatus: databaseOk ? "OK" : "Error",
      ...(databaseOk ? {} : { databaseStatusDetails: "The metadata database cannot be queried." }),
      licenseStatus: "OK",
      versionNumber: WHARF_VERSION,
      releaseNumber: WHARF_VERSION,
      serviceStatus: "OK",
      extensionsInstalled: {},
      disk: diskHealth(await disk.status()),
      packageStores: await stores(),
      node: {
        id: node.id,
        database: isPostgres(db) ? "PostgreSQL" : "SQLite",
        ...(listening === undefined ? {} : { changeFeed: listening ? "OK" : "Error" }),
      },
    };
    return reply.code(databaseOk ? 200 : 500).send(body);
  };
  api.get("/health", health, handler);
  api.get("/health/json", health, handler);

  api.get(
    "/api/version",
    {
      schema: { summary: "Product and version, as text", tags: ["health"], response: { 200: z.string() } },
      config: { access: { public: true } },
    },
    async (_request, reply) => reply.type("text/plain").send(`ProGet-compatible Wharf ${WHARF_VERSION}`),
  );
};
