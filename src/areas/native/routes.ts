import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { forbidden, notFound } from "../../domain/errors.js";
import { queryDoc } from "../../http/query-doc.js";
import { actorName } from "../releases/actor.js";
import { collectPairs } from "../releases/params.js";
import { bindArguments } from "./arguments.js";
import type { NativeRegistry, NativeServices } from "./registry.js";
import { errorText } from "../../http/errors.js";

/**
 * The JSON transport of the native API (docs/seed-api.md area H; docs/compat.md 5.5, 7.7):
 * `GET|POST /api/json/<Method>`, arguments in the query string and/or a form or JSON body. The
 * key arrives as `key`/`API_Key` (query, form), JSON `API_Key`, `X-ApiKey` or Basic, all resolved
 * by the auth hook. A System key needs the `native` scope, anyone else the method's attribute;
 * every refusal is 403 with the seed's sentence. The method list is public knowledge (Inedo
 * publishes it at /reference/api), so an unknown method is 404 before any access check.
 */
export interface NativeRoutesOptions {
  readonly services: NativeServices;
  readonly registry: NativeRegistry;
}

export const nativeRoutes: FastifyPluginAsync<NativeRoutesOptions> = async (app, { services, registry }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const methodList = registry.methods
    .map(
      (m) => `- \`${m.name}\`(${m.parameters.map((p) => p.name + (p.required ? "" : "?")).join(", ")}): ${m.summary}`,
    )
    .join("\n");

  api.route({
    method: ["GET", "POST"],
    url: "/api/json/:method",
    schema: {
      summary: "Call a native API method",
      description:
        "Method names and argument names are case-insensitive; indicators accept Y/N or true/false. " +
        `Methods:\n${methodList}`,
      tags: ["native"],
      params: z.object({ method: z.string().describe("Method name, e.g. Applications_GetApplications") }),
      querystring: queryDoc({ API_Key: "API key (also `key`)", "<Parameter>": "The method's arguments" }),
      response: { 200: z.unknown(), 400: errorText, 403: errorText, 404: errorText, 409: errorText },
    },
    config: { access: { inHandler: true } },
    handler: async (request, reply) => {
      const method = registry.find(request.params.method);
      if (method === undefined) {
        throw notFound("UNKNOWN_NATIVE_METHOD", `The native API method '${request.params.method}' does not exist.`);
      }
      if (!(await request.can({ api: "native", attribute: method.attribute }))) throw forbidden();
      const args = bindArguments(method, collectPairs(request));
      const result = await method.invoke(args, {
        services,
        actor: actorName(request.principal),
        can: (need) => request.can(need),
      });
      if (method.result === undefined) return reply.code(200).send();
      return reply.code(200).type("application/json; charset=utf-8").send(result);
    },
  });
};
