import {
  type ConfigurationRuntime,
  createConfigurationRuntime,
  createConfigurationServices,
  createFeedPackageSource,
} from "../areas/configuration/index.js";
import { parseStart } from "../areas/configuration/configuration-routes.js";
import type { InfrastructureRepository } from "../areas/configuration/infrastructure-repository.js";
import type { EntityType } from "../areas/configuration/remediation-repository.js";
import type { StatusObject } from "../areas/configuration/status.js";
import type { FeedService } from "../areas/management/index.js";
import { assemblyUnavailable, createUpackDownloadService } from "../areas/upack/download/service.js";
import { createUpackQueryRepository } from "../areas/upack/read/query-repository.js";
import type { Config } from "../config.js";
import type { Clock } from "../domain/clock.js";
import { notFound } from "../domain/errors.js";
import { createJobRunner } from "../jobs/runner.js";
import type { Db } from "../storage/database.js";
import { blobStoresOf } from "../storage/blob-stores.js";
import { loadSecretKeys } from "../storage/secret-keys.js";
import { type CommandIo, type CommandLine, printTable, runCommand, UsageError } from "./command.js";

/**
 * `wharf config ...`: configuration management (area B) from the command line, on the data
 * directory's database: the same status the API answers, checks run in this process (local and
 * ssh servers; an agent's server checks it through its agent), and remediation jobs created for
 * the running server's job runner to execute (it looks for them every second). This process never
 * starts a job runner: the restart rule belongs to the server.
 */
export interface ConfigCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
  readonly config: Config;
  readonly feeds: FeedService;
}

export const CONFIG_USAGE = `Usage:
  wharf config status [--server <name> | --role <name> | --environment <name>] [--json]
  wharf config check [--server <name> | --role <name> | --environment <name>]
  wharf config remediate <server|role|environment> <name> [--simulate] [--start <time>] [--job <name>]
  wharf config items <server> [--json]

status prints every server, role and environment, or the one named (--json: as the API answers).
check checks the named server (a role's or an environment's servers; all when none is named) here
and now and prints what it found; agent servers are checked by the running server (its API).
remediate creates a remediation job and prints its token; the running Wharf server executes it
(--start yyyy-MM-ddTHH:mm:ss, UTC: not before then; --simulate: report, change nothing).
items prints the items of the server's last check.`;

const OPTIONS = {
  server: { type: "string" },
  role: { type: "string" },
  environment: { type: "string" },
  json: { type: "boolean" },
  simulate: { type: "boolean" },
  start: { type: "string" },
  job: { type: "string" },
} as const;
type Line = CommandLine<typeof OPTIONS>;
const ENTITY_TYPES: readonly EntityType[] = ["server", "role", "environment"];

/** Runs one config subcommand; returns the exit code (0 ok, 1 refused or a check failed, 2 bad arguments). */
export function configCommand(args: string[], ctx: ConfigCommandContext): Promise<number> {
  return runCommand({ usage: CONFIG_USAGE, options: OPTIONS }, args, ctx, run);
}

/** The runtime on this process's database; its job runner only stores jobs (it is never started). */
async function runtimeOf(ctx: ConfigCommandContext): Promise<{
  runtime: ConfigurationRuntime;
  infrastructure: InfrastructureRepository;
}> {
  const services = createConfigurationServices({
    db: ctx.db,
    clock: ctx.clock,
    config: ctx.config,
    secrets: loadSecretKeys(ctx.config).box,
  });
  const blobs = (await blobStoresOf(ctx.db, ctx.config, ctx.clock)).reader;
  const downloads = createUpackDownloadService({
    repository: createUpackQueryRepository(ctx.db),
    feeds: ctx.feeds,
    blobs,
    assembleVirtual: assemblyUnavailable,
  });
  const err = ctx.err ?? ctx.out;
  const log = {
    warn: (_fields: object, message: string) => err(`warning: ${message}`),
    error: (_fields: object, message: string) => err(`error: ${message}`),
  };
  const runtime = createConfigurationRuntime({
    db: ctx.db,
    clock: ctx.clock,
    config: ctx.config,
    infrastructure: services.infrastructure,
    jobs: createJobRunner({ db: ctx.db, clock: ctx.clock, concurrency: 1, log }),
    packages: createFeedPackageSource({ downloads, downloadBlobs: blobs }),
    credentials: services.credentialsStore,
    log,
  });
  return { runtime, infrastructure: services.infrastructure };
}

function entityOption(values: Line["values"]): { type: EntityType; name: string } | undefined {
  const given = ENTITY_TYPES.filter((type) => values[type] !== undefined);
  if (given.length > 1) throw new UsageError(`name one entity, not ${given.map((t) => `--${t}`).join(" and ")}`);
  const type = given[0];
  return type === undefined ? undefined : { type, name: values[type] as string };
}

function printStatuses(objects: readonly StatusObject[], ctx: ConfigCommandContext): void {
  printTable(
    [
      ["TYPE", "NAME", "STATUS", "COLLECTED", "REMEDIATION", "ERROR"],
      ...objects.map((o) => [
        o.type,
        o.name,
        o.status,
        o.collectionDate ?? "",
        o.remediationId === undefined ? "" : `${o.remediationId} at ${o.remediationDate ?? ""}`,
        o.errorText ?? "",
      ]),
    ],
    ctx.out,
  );
}

async function run({ positionals, values }: Line, ctx: ConfigCommandContext): Promise<number> {
  const [subcommand, ...rest] = positionals;
  if (subcommand === undefined) throw new UsageError("a subcommand is required");
  const { runtime, infrastructure } = await runtimeOf(ctx);

  if (subcommand === "status") {
    if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
    const entity = entityOption(values);
    const objects = entity
      ? [await runtime.status.statusOf(entity.type, entity.name)]
      : await runtime.status.allStatuses();
    if (values.json) ctx.out(JSON.stringify(entity ? objects[0] : objects, null, 2));
    else if (objects.length === 0) ctx.out("No servers, roles or environments.");
    else printStatuses(objects, ctx);
    return 0;
  }

  if (subcommand === "check") {
    if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
    const entity = entityOption(values);
    let ids: number[];
    if (entity === undefined) ids = (await infrastructure.listServers()).map((s) => s.id);
    else if (entity.type === "server") ids = [requireEntity(await infrastructure.findServer(entity.name), entity).id];
    else if (entity.type === "role") {
      ids = await runtime.status.serversWithRole(requireEntity(await infrastructure.findRole(entity.name), entity).id);
    } else {
      const environment = requireEntity(await infrastructure.findEnvironment(entity.name), entity);
      ids = (await infrastructure.environmentServers(environment.id)).map((s) => s.id);
    }
    let failed = false;
    const checked: StatusObject[] = [];
    for (const id of ids) {
      const server = await infrastructure.getServer(id);
      if (server === undefined) continue;
      if (server.type === "agent") {
        ctx.out(`${server.name}: an agent server, checked by the running server (GET /api/configuration/check).`);
        continue;
      }
      const collection = await runtime.checker.check(id);
      if (collection?.status === "error") failed = true;
      checked.push(await runtime.status.statusOf("server", server.name));
    }
    if (checked.length > 0) printStatuses(checked, ctx);
    return failed ? 1 : 0;
  }

  if (subcommand === "remediate") {
    const [type, name, ...extra] = rest;
    if (type === undefined || name === undefined) throw new UsageError("'config remediate' needs a type and a name");
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
    const entityType = ENTITY_TYPES.find((t) => t === type.toLowerCase());
    if (entityType === undefined) throw new UsageError(`'${type}' is not server, role or environment`);
    const token = await runtime.remediation.request({
      entityType,
      entityName: name,
      name: values.job,
      start: values.start === undefined ? undefined : parseStart(values.start),
      simulate: values.simulate === true,
    });
    ctx.out(String(token));
    (ctx.err ?? ctx.out)(
      `Remediation job ${token} created; the running Wharf server executes it (remediate/status?token=${token}).`,
    );
    return 0;
  }

  if (subcommand === "items") {
    const [server, ...extra] = rest;
    if (server === undefined) throw new UsageError("'config items' needs a server name");
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
    const items = await runtime.status.itemsOf(server);
    if (values.json) ctx.out(JSON.stringify(items, null, 2));
    else if (items.length === 0) ctx.out(`No items collected on ${server} yet.`);
    else {
      printTable(
        [
          ["TYPE", "KEY", "STATUS", "ROLE", "COLLECTED", "DIFFERS"],
          ...items.map((item) => [
            item.type,
            item.key,
            item.status,
            item.collectionRole ?? "",
            item.collectionDate,
            (item.differences ?? []).map((d) => (d as { property?: string }).property ?? "").join(","),
          ]),
        ],
        ctx.out,
      );
    }
    return 0;
  }
  throw new UsageError(`unknown subcommand '${subcommand}'`);
}

function requireEntity<T>(found: T | undefined, entity: { type: EntityType; name: string }): T {
  if (found === undefined)
    throw notFound("CONFIG_ENTITY_NOT_FOUND", `There is no ${entity.type} named '${entity.name}'.`);
  return found;
}
