import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import {
  AGENT_API_PREFIX,
  AGENT_JSON_TYPE,
  AGENT_LIMITS,
  agentVersionOf,
  MAX_POLL_WAIT_SECONDS,
} from "../../agent/protocol.js";
import { DomainError, invalid, notFound } from "../../domain/errors.js";
import { jsonCostProblem } from "../../domain/json-depth.js";
import type { PackageSource } from "../../drift/model.js";
import { param } from "../../http/params.js";
import type { AgentHub, AgentServer } from "./agent-hub.js";
import { firstIssue, logBodySchema, workResultSchema } from "./agent-schemas.js";

/**
 * `/api/agent/v1/...` (src/agent/protocol.ts): what `wharf agent` calls. Authenticated here, not by
 * the API-key hook: `Authorization: Bearer <agent key>`, found by its hash in servers.agent_key_hash.
 * An agent key is good for these routes only (every other API takes it for an unknown API key),
 * and these routes take nothing else. Missing key 401, unknown or revoked key 403, both plain text.
 *
 * The agent posts its JSON as AGENT_JSON_TYPE, read only once its key was checked (a route-level
 * onRequest hook runs before any body is read), up to each route's own limit: a 1,000-item result
 * is past the 64 KiB an unknown sender's JSON may have (WHARF_PRE_AUTH_BODY_BYTES).
 */
export interface AgentRoutesOptions {
  readonly hub: AgentHub;
  /** Where the package items of a work come from (the universal feeds). */
  readonly packages: PackageSource;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The server whose agent key authenticated this request (agent routes only). */
    agentServer: AgentServer | null;
  }
}

/** Nesting and number of JSON values an agent's body may have (a result of 10,000 items has some 200,000). */
const AGENT_JSON_DEPTH = 16;
const AGENT_JSON_VALUES = 2_000_000;
const WORK_ID = /^[0-9a-f-]{36}$/;
const INVALID_KEY =
  "The agent key is not valid: it was revoked or never issued. Ask an administrator for the server's new key.";

function refuse(reply: FastifyReply, status: 401 | 403, code: string, message: string): FastifyReply {
  if (status === 401) reply.header("WWW-Authenticate", 'Bearer realm="Wharf agent"');
  return reply.code(status).header("Content-Type", "text/plain").header("X-Wharf-Error", code).send(message);
}

function serverOf(request: FastifyRequest): AgentServer {
  const server = request.agentServer;
  // Only reachable if a route forgot the hook: refuse rather than act for nobody.
  if (server === null) throw new DomainError("forbidden", "AGENT_KEY_INVALID", "No agent key was checked.");
  return server;
}

function workIdOf(request: FastifyRequest): string {
  const { id } = request.params as { id: string };
  if (!WORK_ID.test(id)) throw notFound("AGENT_WORK_NOT_FOUND", `No work ${id} of this agent is waiting for a result.`);
  return id;
}

/** `wait` in seconds, 0 to 25 (more is taken as 25); absent: 25. */
function waitMsOf(request: FastifyRequest): number {
  const raw = param(request.query as Record<string, unknown>, "wait");
  if (raw === undefined) return MAX_POLL_WAIT_SECONDS * 1000;
  if (!/^\d{1,6}(\.\d+)?$/.test(raw)) {
    throw invalid(
      "INVALID_PARAMETER",
      `The query parameter 'wait' must be a number of seconds (0 to ${MAX_POLL_WAIT_SECONDS}).`,
    );
  }
  return Math.round(Math.min(Number(raw), MAX_POLL_WAIT_SECONDS) * 1000);
}

function requiredItem(request: FastifyRequest): string {
  const item = param(request.query as Record<string, unknown>, "item");
  if (item === undefined)
    throw invalid("MISSING_PARAMETER", "The query parameter 'item' (a package item's key) is required.");
  return item;
}

/** Aborted when the agent's connection closes before the answer went out. */
function closeSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort(new Error("The agent closed its connection."));
  });
  return controller.signal;
}

export const agentRoutes: FastifyPluginAsync<AgentRoutesOptions> = async (app, { hub, packages }) => {
  app.decorateRequest("agentServer", null);
  app.addContentTypeParser(AGENT_JSON_TYPE, { parseAs: "string" }, (_request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    const problem = jsonCostProblem(text, AGENT_JSON_DEPTH, AGENT_JSON_VALUES);
    if (problem !== undefined) {
      const message = problem === "depth" ? "nested too deeply" : `more than ${AGENT_JSON_VALUES} values`;
      return done(new DomainError("too_large", "AGENT_BODY_TOO_LARGE", `The body is ${message}.`));
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(invalid("AGENT_BODY_INVALID", "The body is not valid JSON."));
    }
  });

  app.addHook("onRequest", async (request, reply) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
    if (match?.[1] === undefined) {
      return refuse(
        reply,
        401,
        "AGENT_KEY_REQUIRED",
        "An agent key is required: send Authorization: Bearer <agent key>.",
      );
    }
    const server = await hub.identify(match[1]);
    if (server === undefined) {
      return refuse(reply, 403, "AGENT_KEY_INVALID", INVALID_KEY);
    }
    request.agentServer = server;
    hub.seen(server, agentVersionOf(request.headers["user-agent"]));
  });

  const access = { access: { public: true } } as const;
  const schema = { hide: true } as const;

  app.get(`${AGENT_API_PREFIX}/poll`, { config: access, schema }, async (request, reply) => {
    const server = serverOf(request);
    const waitMs = waitMsOf(request);
    const work = await hub.poll(server, {
      waitMs,
      version: agentVersionOf(request.headers["user-agent"]),
      signal: closeSignal(reply),
    });
    if (work === "revoked") return refuse(reply, 403, "AGENT_KEY_INVALID", INVALID_KEY);
    reply.header("X-Wharf-Agent-Server", encodeURIComponent(server.name));
    if (work.length === 0) return reply.code(204).send();
    return reply.type("application/json").send(JSON.stringify({ work }));
  });

  app.post(
    `${AGENT_API_PREFIX}/work/:id/log`,
    { config: access, schema, bodyLimit: AGENT_LIMITS.logBytes },
    async (request, reply) => {
      const server = serverOf(request);
      const id = workIdOf(request);
      const parsed = logBodySchema.safeParse(request.body ?? {});
      if (!parsed.success) throw invalid("AGENT_LOG_INVALID", `Invalid log: ${firstIssue(parsed.error)}`);
      await hub.log(server, id, parsed.data.lines);
      return reply.code(204).send();
    },
  );

  app.post(
    `${AGENT_API_PREFIX}/work/:id/result`,
    { config: access, schema, bodyLimit: AGENT_LIMITS.resultBytes },
    async (request, reply) => {
      const server = serverOf(request);
      const id = workIdOf(request);
      const parsed = workResultSchema.safeParse(request.body);
      if (!parsed.success) throw invalid("AGENT_RESULT_INVALID", `Invalid result: ${firstIssue(parsed.error)}`);
      await hub.complete(server, id, parsed.data);
      return reply.code(204).send();
    },
  );

  app.get(`${AGENT_API_PREFIX}/work/:id/resolve`, { config: access, schema }, async (request, reply) => {
    const server = serverOf(request);
    const wanted = await hub.workPackage(server, workIdOf(request), requiredItem(request));
    const resolved = await packages.resolve(wanted.feed, wanted.group, wanted.name, wanted.version, closeSignal(reply));
    if (resolved === undefined) throw packageMissing(wanted.feed, wanted.group, wanted.name, wanted.version);
    return reply.type("application/json").send(JSON.stringify(resolved));
  });

  app.get(`${AGENT_API_PREFIX}/work/:id/package`, { config: access, schema }, async (request, reply) => {
    const server = serverOf(request);
    const id = workIdOf(request);
    const itemKey = requiredItem(request);
    const wanted = await hub.workPackage(server, id, itemKey);
    const signal = closeSignal(reply);
    const asked = param(request.query as Record<string, unknown>, "version") ?? wanted.version;
    // An exact item serves that version only; `latest` any version of that one package.
    if (wanted.version.toLowerCase() !== "latest" && asked !== wanted.version) {
      throw notFound(
        "AGENT_PACKAGE_NOT_IN_WORK",
        `Work ${id} installs version ${wanted.version} of '${itemKey}', not ${asked}.`,
      );
    }
    let version = asked;
    if (version.toLowerCase() === "latest") {
      const resolved = await packages.resolve(wanted.feed, wanted.group, wanted.name, version, signal);
      if (resolved === undefined) throw packageMissing(wanted.feed, wanted.group, wanted.name, version);
      version = resolved.version;
    }
    const stream = await packages.open(wanted.feed, wanted.group, wanted.name, version, signal);
    return reply.type("application/octet-stream").send(stream);
  });
};

function packageMissing(feed: string, group: string, name: string, version: string): DomainError {
  const full = group === "" ? name : `${group}/${name}`;
  return notFound("AGENT_PACKAGE_NOT_FOUND", `Feed ${feed} has no version '${version}' of package ${full}.`);
}
