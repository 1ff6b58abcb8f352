import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import type { AccessNeed } from "../../domain/principal.js";
import { errorText } from "../../http/errors.js";
import type { EveryStoreCollection, EveryStoreCollector } from "../../storage/stores-collector.js";

/** Full-control System keys; users and personal keys with Admin_ConfigureProGet (as /api/api-keys). */
const ADMINISTER: AccessNeed = { api: "full-control", attribute: "Admin_ConfigureProGet" };

const gcQuery = z.object({ dryRun: z.string().optional() }).passthrough();

const resultSchema = z.object({
  dryRun: z.boolean(),
  examined: z.number(),
  unreferenced: z.number(),
  inGracePeriod: z.number(),
  deleted: z.number(),
  bytesFreed: z.number(),
  blobs: z.array(z.object({ sha256: z.string(), size: z.number(), store: z.string().optional() })),
  durationMs: z.number(),
  /** Each package store's part; `error` names a store that could not be collected (the others were). */
  stores: z.array(
    z.object({
      store: z.string(),
      examined: z.number(),
      deleted: z.number(),
      bytesFreed: z.number(),
      abandonedUploads: z.number().optional(),
      error: z.string().optional(),
    }),
  ),
});

/** Blobs serialized between two yields to the event loop. */
const BLOBS_PER_SLICE = 500;

/**
 * The result as JSON, its blob list a slice at a time: a collection that freed 10,000 blobs
 * answers a megabyte, which serialized in one go (through the response schema) held the event loop
 * for 26-50 ms, in the way of the uploads running beside it.
 */
async function jsonInSlices(result: EveryStoreCollection): Promise<string> {
  const { blobs, ...totals } = result;
  const parts: string[] = [];
  for (let start = 0; start < blobs.length; start += BLOBS_PER_SLICE) {
    if (start > 0) await yieldToEventLoop();
    const slice = blobs
      .slice(start, start + BLOBS_PER_SLICE)
      .map(({ sha256, size, store }) => ({ sha256, size, store }));
    parts.push(JSON.stringify(slice).slice(1, -1));
  }
  return `${JSON.stringify(totals).slice(0, -1)},"blobs":[${parts.join(",")}]}`;
}

/** `?dryRun=` as true or false (absent: false); anything else is a 400 naming the parameter. */
function dryRunOf(value: string | undefined): boolean {
  if (value === undefined || value === "" || value.toLowerCase() === "false") return false;
  if (value.toLowerCase() === "true") return true;
  throw invalid("INVALID_DRY_RUN", "The dryRun parameter must be true or false.");
}

/**
 * Blob garbage collection on demand: `POST /api/storage/gc?dryRun=true|false`, for full-control
 * System keys and administrators (Admin_ConfigureProGet). Answers the collection's result: blobs
 * examined, unreferenced, still in their grace period, deleted (or that a dry run would delete)
 * with their sizes, and the bytes freed. 409 `GC_RUNNING` while another collection runs.
 */
export const storageGcRoutes: FastifyPluginAsync<{ collector: EveryStoreCollector }> = async (app, { collector }) => {
  app.withTypeProvider<ZodTypeProvider>().route({
    method: "POST",
    url: "/api/storage/gc",
    schema: {
      summary: "Delete blobs nothing references (garbage collection)",
      description:
        "A blob goes once two collections at least an hour apart saw it unreferenced and, right before the " +
        "delete, no row names it and no upload holds it. `dryRun=true` lists what would go and deletes nothing.",
      tags: ["feeds"],
      querystring: gcQuery,
      response: { 200: resultSchema, 400: errorText, 401: errorText, 403: errorText, 409: errorText },
    },
    config: { access: { need: ADMINISTER } },
    handler: async (request, reply) => {
      const result = await collector.collect({ dryRun: dryRunOf(request.query.dryRun) });
      // A string with a JSON type is sent as it is (the schema above still documents it).
      return reply.type("application/json; charset=utf-8").send((await jsonInSlices(result)) as never);
    },
  });
};
