import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { DomainError, invalid } from "../../domain/errors.js";
import { errors, MANAGE, VIEW } from "./infrastructure-routes.js";
import { MAX_VARIABLE_BYTES } from "./variables-model.js";
import { parseEntityType, type VariableScope, type VariablesService } from "./variables-service.js";

/**
 * `/api/variables/...` (docs/compat.md 8.4): `<server|role|environment>/<name>` and `global` as
 * objects (GET; POST or PUT replace all), one variable at `.../<var>` as raw text (GET, POST, PUT,
 * DELETE), `scoped/all` and `scoped/single`. InedoCore POSTs `scoped/single` as JSON with no
 * Content-Type at all (and a global value as text/plain), so bodies are read as they come: a JSON
 * object whatever its declared type, or raw text for one value. Writes answer 200 empty.
 */
const tags = ["variables"];
/** A body of JSON variables: a few variables at most 64 KiB each; Fastify's 1 MiB limit for declared JSON. */
const MAX_RAW_BODY = 1024 * 1024;

async function rawText(request: FastifyRequest, limit: number): Promise<string> {
  const body: unknown = request.body;
  if (typeof body === "string") return body;
  if (!(body instanceof Readable)) {
    if (body === undefined || body === null) return "";
    throw invalid("INVALID_BODY", "Send the value as the raw request body (text/plain).");
  }
  const length = Number(request.headers["content-length"] ?? "0");
  if (length > limit)
    throw new DomainError("too_large", "BODY_TOO_LARGE", `The body is too large (${limit} bytes at most).`);
  let size = 0;
  body.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit)
      body.destroy(new DomainError("too_large", "BODY_TOO_LARGE", `The body is too large (${limit} bytes at most).`));
  });
  return text(body);
}

/** A JSON body, declared as JSON or not declared at all (InedoCore's StreamContent). */
async function jsonBody(request: FastifyRequest): Promise<unknown> {
  if (!(request.body instanceof Readable)) return request.body;
  const raw = await rawText(request, MAX_RAW_BODY);
  if (raw.trim() === "") return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw invalid("INVALID_JSON", "The body is not valid JSON.");
  }
}

const entityParams = z.object({ type: z.string(), name: z.string() });
const entityVariableParams = z.object({ type: z.string(), name: z.string(), variable: z.string() });
const globalParams = z.object({ variable: z.string() });
const object = z.record(z.string(), z.unknown());
const scopedVariable = z.object({
  name: z.string(),
  value: z.string().nullable(),
  sensitive: z.boolean(),
  server: z.string().nullable(),
  role: z.string().nullable(),
  environment: z.string().nullable(),
});

export const variablesRoutes: FastifyPluginAsync<{ variables: VariablesService }> = async (app, { variables }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const entity = (params: { type: string; name: string }): VariableScope => ({
    type: parseEntityType(params.type),
    name: params.name,
  });
  const global: VariableScope = { type: "global" };

  // Static segments (global, scoped) win over the `:type` parameter in Fastify's router.
  api.get("/api/variables/scoped/all", {
    schema: { summary: "Every variable of every scope", tags, response: { 200: z.array(scopedVariable), ...errors } },
    config: VIEW,
    handler: async () => variables.scopedAll(),
  });
  api.route({
    method: ["POST", "PUT"],
    url: "/api/variables/scoped/single",
    schema: {
      summary: "Set one scoped variable (JSON, with or without Content-Type)",
      tags,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => {
      await variables.setScoped(await jsonBody(request));
      return reply.type("text/plain").send("");
    },
  });
  api.delete("/api/variables/scoped/single", {
    schema: {
      summary: "Delete one scoped variable (named by the JSON body)",
      tags,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => {
      await variables.deleteScoped(await jsonBody(request));
      return reply.type("text/plain").send("");
    },
  });

  api.get("/api/variables/global", {
    schema: { summary: "Global variables", tags, response: { 200: object, ...errors } },
    config: VIEW,
    handler: async () => variables.getAll(global),
  });
  api.route({
    method: ["POST", "PUT"],
    url: "/api/variables/global",
    schema: { summary: "Replace every global variable", tags, response: { 200: z.string(), ...errors } },
    config: MANAGE,
    handler: async (request, reply) => {
      await variables.replaceAll(global, await jsonBody(request));
      return reply.type("text/plain").send("");
    },
  });
  api.get("/api/variables/global/:variable", {
    schema: {
      summary: "One global variable (raw text)",
      tags,
      params: globalParams,
      response: { 200: z.string(), ...errors },
    },
    config: VIEW,
    handler: async (request, reply) =>
      reply.type("text/plain; charset=utf-8").send(await variables.getOne(global, request.params.variable)),
  });
  api.route({
    method: ["POST", "PUT"],
    url: "/api/variables/global/:variable",
    schema: {
      summary: "Set one global variable (raw text body)",
      tags,
      params: globalParams,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => {
      await variables.setOne(global, request.params.variable, await rawText(request, MAX_VARIABLE_BYTES + 1));
      return reply.type("text/plain").send("");
    },
  });
  api.delete("/api/variables/global/:variable", {
    schema: {
      summary: "Delete one global variable",
      tags,
      params: globalParams,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => {
      await variables.deleteOne(global, request.params.variable);
      return reply.type("text/plain").send("");
    },
  });

  api.get("/api/variables/:type/:name", {
    schema: {
      summary: "Variables of a server, role or environment",
      tags,
      params: entityParams,
      response: { 200: object, ...errors },
    },
    config: VIEW,
    handler: async (request) => variables.getAll(entity(request.params)),
  });
  api.route({
    method: ["POST", "PUT"],
    url: "/api/variables/:type/:name",
    schema: {
      summary: "Replace the variables of a server, role or environment",
      tags,
      params: entityParams,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => {
      await variables.replaceAll(entity(request.params), await jsonBody(request));
      return reply.type("text/plain").send("");
    },
  });
  api.get("/api/variables/:type/:name/:variable", {
    schema: {
      summary: "One variable (raw text)",
      tags,
      params: entityVariableParams,
      response: { 200: z.string(), ...errors },
    },
    config: VIEW,
    handler: async (request, reply) =>
      reply
        .type("text/plain; charset=utf-8")
        .send(await variables.getOne(entity(request.params), request.params.variable)),
  });
  api.route({
    method: ["POST", "PUT"],
    url: "/api/variables/:type/:name/:variable",
    schema: {
      summary: "Set one variable (raw text body)",
      tags,
      params: entityVariableParams,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => {
      await variables.setOne(
        entity(request.params),
        request.params.variable,
        await rawText(request, MAX_VARIABLE_BYTES + 1),
      );
      return reply.type("text/plain").send("");
    },
  });
  api.delete("/api/variables/:type/:name/:variable", {
    schema: {
      summary: "Delete one variable",
      tags,
      params: entityVariableParams,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => {
      await variables.deleteOne(entity(request.params), request.params.variable);
      return reply.type("text/plain").send("");
    },
  });
};
