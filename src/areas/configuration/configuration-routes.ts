import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { invalid, notFound } from "../../domain/errors.js";
import type { AccessNeed } from "../../domain/principal.js";
import { param, type QueryLike } from "../../http/params.js";
import { queryDoc } from "../../http/query-doc.js";
import type { Checker } from "./checker.js";
import type { InfrastructureRepository } from "./infrastructure-repository.js";
import type { EntityType } from "./remediation-repository.js";
import type { RemediationRequest, RemediationService } from "./remediation.js";
import type { StatusService } from "./status.js";

/**
 * `/api/configuration/...` (docs/seed-api.md B; docs/compat.md 8.1; clients.md 3.6, InedoCore):
 * `status`, `check`, `remediate/<type>/<name>`, `remediate/status` and `server/<name>`, each by
 * GET or POST, arguments in the query string (or, for POST, form or JSON fields), the key by any
 * transport the auth hook knows (`key`, `X-ApiKey`, Basic `api:<key>`, body `key`/`API_Key`).
 * A System key needs the `configuration` scope; users and personal keys Infrastructure_View to
 * read and Infrastructure_Manage to check and remediate. A bad key is 403 with a plain-text body.
 */
export interface ConfigurationRoutesOptions {
  readonly infrastructure: InfrastructureRepository;
  readonly status: StatusService;
  readonly checker: Checker;
  readonly remediation: RemediationService;
}

/** What reading status, items and job states needs (the web UI's configuration pages ask the same). */
export const CONFIGURATION_VIEW: AccessNeed = { api: "configuration", attribute: "Infrastructure_View" };
/** What checking and remediating needs. */
export const CONFIGURATION_MANAGE: AccessNeed = { api: "configuration", attribute: "Infrastructure_Manage" };
const VIEW = CONFIGURATION_VIEW;
const MANAGE = CONFIGURATION_MANAGE;
const TAGS = ["configuration"];
const ENTITY_TYPES: readonly EntityType[] = ["server", "role", "environment"];
/** Parameters that carry the key, never an entity type. */
const KEY_PARAMETERS = new Set(["key", "api_key"]);
const MAX_JOB_NAME = 200;

/** Query-string arguments, and for POST the form or JSON fields (the query wins). */
function argumentsOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  const fields = body !== null && typeof body === "object" && !Array.isArray(body) ? body : {};
  return { ...(fields as Record<string, unknown>), ...(request.query as Record<string, unknown>) };
}

/** The one entity the arguments name, or undefined for none; 400 for another type or for two. */
function entityOf(
  args: Record<string, unknown>,
  allowed: readonly EntityType[],
): { type: EntityType; name: string } | undefined {
  const named: { type: EntityType; name: string }[] = [];
  for (const [parameter, value] of Object.entries(args)) {
    const lower = parameter.toLowerCase();
    if (KEY_PARAMETERS.has(lower)) continue;
    const type = allowed.find((t) => t === lower);
    if (type === undefined) {
      throw invalid("INVALID_ENTITY_TYPE", `'${parameter}' is not an entity type here: use ${allowed.join(", ")}.`);
    }
    const name = param({ [parameter]: value }, parameter)?.trim();
    if (!name) throw invalid("MISSING_ENTITY_NAME", `The '${parameter}' parameter needs a name.`);
    named.push({ type, name });
  }
  if (named.length > 1) {
    throw invalid("TOO_MANY_ENTITIES", `Name one entity, not ${named.map((e) => e.type).join(" and ")}.`);
  }
  return named[0];
}

/**
 * `start`: `yyyy-MM-ddTHH:mm:ss` as the seed writes it, UTC unless it carries a zone; fractions
 * and a space for the T are accepted. 400 otherwise.
 */
export function parseStart(text: string): Date {
  const match = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(
    text.trim(),
  );
  if (match !== null) {
    const [, year, month, day, hour, minute, second = "00", fraction = "", zone] = match;
    const offset =
      zone === undefined ? "Z" : zone.toUpperCase() === "Z" ? "Z" : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
    const date = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${offset}`);
    // Dates roll over (the 30th of February is in March): the fields must read back as given.
    const exact = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}Z`);
    if (
      !Number.isNaN(date.getTime()) &&
      exact.toISOString().startsWith(`${year}-${month}-${day}T${hour}:${minute}:${second}`)
    ) {
      return date;
    }
  }
  throw invalid("INVALID_START", `'start' must be a date and time as yyyy-MM-ddTHH:mm:ss, not '${text}'.`);
}

export function parseSimulate(text: string | undefined): boolean {
  if (text === undefined) return false;
  const value = text.trim().toLowerCase();
  if (["true", "1", "yes"].includes(value)) return true;
  if (["false", "0", "no"].includes(value)) return false;
  throw invalid("INVALID_SIMULATE", `'simulate' must be true or false, not '${text}'.`);
}

/**
 * The servers a check of the entity covers (none named: every server); 404 for an unknown name. A
 * role's status counts the servers that have it through dependencies too: so does its check.
 */
export async function serversToCheck(
  infrastructure: InfrastructureRepository,
  status: Pick<StatusService, "serversWithRole">,
  entity: { type: EntityType; name: string } | undefined,
): Promise<number[]> {
  if (entity === undefined) return (await infrastructure.listServers()).map((server) => server.id);
  if (entity.type === "server") {
    const server = await infrastructure.findServer(entity.name);
    if (server === undefined) throw notFound("CONFIG_ENTITY_NOT_FOUND", `There is no server named '${entity.name}'.`);
    return [server.id];
  }
  const named =
    entity.type === "role"
      ? await infrastructure.findRole(entity.name)
      : await infrastructure.findEnvironment(entity.name);
  if (named === undefined)
    throw notFound("CONFIG_ENTITY_NOT_FOUND", `There is no ${entity.type} named '${entity.name}'.`);
  return entity.type === "role"
    ? await status.serversWithRole(named.id)
    : (await infrastructure.environmentServers(named.id)).map((server) => server.id);
}

/** A remediation's arguments (`job`, `start`, `simulate`) read as the API reads them; 400 for bad ones. */
export function remediationRequestOf(entityType: EntityType, entityName: string, args: QueryLike): RemediationRequest {
  const startText = param(args, "start");
  const name = param(args, "job")?.trim();
  if (name !== undefined && name.length > MAX_JOB_NAME) {
    throw invalid("INVALID_JOB_NAME", `'job' may have ${MAX_JOB_NAME} characters at most.`);
  }
  return {
    entityType,
    entityName,
    name: name || undefined,
    start: startText === undefined ? undefined : parseStart(startText),
    simulate: parseSimulate(param(args, "simulate")),
  };
}

const plainText = (reply: FastifyReply, body: string) =>
  reply.header("Content-Type", "text/plain; charset=utf-8").header("Cache-Control", "no-store").send(body);

export const configurationRoutes: FastifyPluginAsync<ConfigurationRoutesOptions> = async (app, options) => {
  const { infrastructure, status, checker, remediation } = options;
  const route = (
    url: string,
    need: AccessNeed,
    schema: { summary: string; description: string; querystring?: unknown },
    handler: (request: FastifyRequest<{ Params: Record<string, string> }>, reply: FastifyReply) => Promise<unknown>,
  ) =>
    app.route({
      method: ["GET", "POST"],
      url,
      schema: { ...schema, tags: TAGS },
      config: { access: { need } },
      handler,
    });

  route(
    "/api/configuration/status",
    VIEW,
    {
      summary: "Configuration status",
      description:
        "One status object for `server=`, `role=` or `environment=`; an array of every server, role and " +
        "environment when none is named (docs/seed-api.md B). 400 for another entity type or two of them, 404 for an unknown name.",
      querystring: queryDoc({ server: "A server's name", role: "A role's name", environment: "An environment's name" }),
    },
    async (request, reply) => {
      const entity = entityOf(argumentsOf(request), ENTITY_TYPES);
      reply.header("Cache-Control", "no-store");
      if (entity !== undefined) return await status.statusOf(entity.type, entity.name);
      // Already JSON (kept while nothing changed): a thousand servers are not serialised again per request.
      return reply.header("Content-Type", "application/json; charset=utf-8").send(await status.allStatusesJson());
    },
  );

  route(
    "/api/configuration/check",
    MANAGE,
    {
      summary: "Check configuration",
      description:
        "Starts a check of the named server, of a role's or an environment's servers, or of every server when none " +
        "is named, and answers 200 with an empty body at once; the checks run in the background.",
      querystring: queryDoc({ server: "A server's name", role: "A role's name", environment: "An environment's name" }),
    },
    async (request, reply) => {
      const entity = entityOf(argumentsOf(request), ENTITY_TYPES);
      checker.request(await serversToCheck(infrastructure, status, entity));
      return reply.header("Cache-Control", "no-store").send();
    },
  );

  route(
    "/api/configuration/remediate/status",
    VIEW,
    {
      summary: "Remediation job status",
      description:
        "Exactly one word as text/plain: pending, running, completed, faulted or disabled. 400 for a missing " +
        "token or one that names no remediation job.",
      querystring: queryDoc({ token: "The token the remediate call answered" }),
    },
    async (request, reply) => {
      const token = param(argumentsOf(request) as QueryLike, "token")?.trim();
      if (!token) throw invalid("MISSING_TOKEN", "The 'token' parameter is required.");
      return plainText(reply, await remediation.stateOf(token));
    },
  );

  route(
    "/api/configuration/remediate/:entityType/:entityName",
    MANAGE,
    {
      summary: "Remediate drift",
      description:
        "Creates a remediation job for a server, a role (its items on its servers) or an environment and answers " +
        "its token as text/plain. `job`: a name; `start`: yyyy-MM-ddTHH:mm:ss (UTC), not before then; `simulate`: " +
        "report what would change, change nothing. 400 for bad arguments, 404 for an unknown entity.",
      querystring: queryDoc({
        job: "A name for the job",
        start: "yyyy-MM-ddTHH:mm:ss (UTC)",
        simulate: "true or false",
      }),
    },
    async (request, reply) => {
      const { entityType, entityName } = request.params as { entityType: string; entityName: string };
      const type = ENTITY_TYPES.find((t) => t === entityType.toLowerCase());
      if (type === undefined) {
        throw invalid("INVALID_ENTITY_TYPE", `'${entityType}' is not an entity type: use server, role or environment.`);
      }
      const token = await remediation.request(
        remediationRequestOf(type, entityName, argumentsOf(request) as QueryLike),
      );
      return plainText(reply, String(token));
    },
  );

  route(
    "/api/configuration/server/:serverName",
    VIEW,
    {
      summary: "Server configuration",
      description:
        "The items of the server's last completed check: type, key, status, collectionDate, collectionId, " +
        "collectionRole, and remediationDate/remediationId while a remediation job is pending. 404 for an unknown server.",
    },
    async (request, reply) => {
      const { serverName } = request.params as { serverName: string };
      reply.header("Cache-Control", "no-store");
      return await status.itemsOf(serverName);
    },
  );
};
