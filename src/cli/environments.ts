import { createReleasesServices } from "../areas/releases/index.js";
import { environmentJson } from "../areas/releases/schemas.js";
import type { Clock } from "../domain/clock.js";
import type { Db } from "../storage/database.js";
import { type CommandIo, type CommandLine, printTable, runCommand, UsageError } from "./command.js";

/**
 * `wharf environments ...`: the catalog service of `/api/infrastructure/environments/...`
 * (docs/compat.md 8.2), run as an administrator. Pipeline stages name the environment they deploy to.
 */

export interface EnvironmentsCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
}

export const ENVIRONMENTS_USAGE = `Usage:
  wharf environments list
  wharf environments create <name>
  wharf environments delete <name>

Names: up to 50 letters, digits, '-' and '_', starting with a letter. create prints the
environment as /api/infrastructure/environments/create answers it.`;

const OPTIONS = {} as const;

/** Runs one environments subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function environmentsCommand(args: string[], ctx: EnvironmentsCommandContext): Promise<number> {
  return runCommand({ usage: ENVIRONMENTS_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run({ positionals }: CommandLine<typeof OPTIONS>, ctx: EnvironmentsCommandContext): Promise<number> {
  const [subcommand, name, ...extra] = positionals;
  const { catalog } = createReleasesServices(ctx);
  if (subcommand === undefined) throw new UsageError("a subcommand is required");
  if (!["list", "create", "delete"].includes(subcommand)) throw new UsageError(`unknown subcommand '${subcommand}'`);
  if (subcommand === "list") {
    if (name !== undefined) throw new UsageError("'environments list' takes no arguments");
    const environments = await catalog.listEnvironments();
    if (environments.length === 0) {
      ctx.out("No environments.");
      return 0;
    }
    printTable(
      [
        ["ID", "NAME", "PARENT", "ACTIVE", "VARIABLES"],
        ...environments.map((e) => [
          String(e.id),
          e.name,
          e.parentName ?? "",
          String(e.active),
          Object.keys(e.variables).join(","),
        ]),
      ],
      ctx.out,
    );
    return 0;
  }
  if (name === undefined) throw new UsageError(`'environments ${subcommand}' needs an environment name`);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  if (subcommand === "create") {
    const created = await catalog.createEnvironment({ name, active: true, variables: {} });
    ctx.out(JSON.stringify(environmentJson(created), null, 2));
    return 0;
  }
  await catalog.deleteEnvironment(name);
  ctx.out(`Deleted environment '${name}'.`);
  return 0;
}
