import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { invalid, notFound } from "../../domain/errors.js";
import { queryDoc } from "../../http/query-doc.js";
import { filterLogByLevel } from "./execution-log.js";
import type { Deployment } from "./model.js";
import { parseWholeNumber } from "./params.js";
import type { ReleaseService } from "./release-service.js";
import { authorizeReleases, errors, TAGS } from "./routes-common.js";

/**
 * `GET /executions/logs?executionId=<id>&level=<n>` (docs/compat.md 7.5 step 7): the plain-text log
 * the Jenkins BuildMaster plugin prints after a failed deployment, fetched with Basic user:password
 * (API keys work too). The execution id is the deployment's id, as everywhere in this area (the
 * plugin passes the `id` the deploy answered). Read access as for `/api/releases`.
 */
export interface ExecutionLogRoutesOptions {
  readonly service: ReleaseService;
  /** The execution's log: final once it ended, so far while it runs (the deployment runner's). */
  readonly logOf: (deployment: Deployment) => Promise<string>;
}

function wholeNumber(query: Record<string, unknown>, name: string): number | undefined {
  const entry = Object.entries(query).find(([key]) => key.toLowerCase() === name.toLowerCase());
  const raw = Array.isArray(entry?.[1]) ? undefined : entry?.[1];
  if (raw === undefined || raw === "") return undefined;
  const value = typeof raw === "string" ? parseWholeNumber(raw.trim()) : undefined;
  if (value === undefined) throw invalid("INVALID_PARAMETER", `The parameter '${name}' must be a whole number.`);
  return value;
}

export const executionLogRoutes: FastifyPluginAsync<ExecutionLogRoutesOptions> = async (app, { service, logOf }) => {
  app.get("/executions/logs", {
    schema: {
      summary: "Execution log (plain text)",
      description:
        "The deployment's log, one line per entry (`<time> <LEVEL> <message>`); `level` keeps entries at or above " +
        "it: 0 debug (all, the default), 10 info, 20 warning, 30 error. 404 for an unknown execution.",
      tags: TAGS,
      querystring: queryDoc({ executionId: "Deployment (execution) id", level: "Lowest level shown (0, 10, 20, 30)" }),
      response: { 200: z.string(), ...errors },
    },
    config: { access: { inHandler: true } },
    handler: async (request, reply) => {
      await authorizeReleases(request, "Applications_View");
      const query = (request.query ?? {}) as Record<string, unknown>;
      const executionId = wholeNumber(query, "executionId");
      if (executionId === undefined) {
        throw invalid("MISSING_PARAMETER", "The parameter 'executionId' is required.");
      }
      const level = wholeNumber(query, "level") ?? 0;
      const deployment = await service.findDeployment(executionId);
      if (deployment === undefined) throw notFound("NOT_FOUND", "The execution was not found.");
      const log = filterLogByLevel(await logOf(deployment), level);
      return reply.type("text/plain; charset=utf-8").header("cache-control", "no-store").send(log);
    },
  });
};
