import type { FastifyPluginAsync, FastifyReply } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { type Db, isDatabaseUsable } from "../../storage/database.js";
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
});

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
export const healthRoutes: FastifyPluginAsync<{ db: Db; disk: DiskSpace }> = async (app, { db, disk }) => {
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
    const databaseOk = isDatabaseUsable(db);
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
