import { createReleasesServices } from "../areas/releases/index.js";
import type { ReleaseUsage } from "../areas/releases/model.js";
import { applicationInfo } from "../areas/releases/schemas.js";
import type { Clock } from "../domain/clock.js";
import type { Db } from "../storage/database.js";
import { type CommandIo, type CommandLine, printTable, runCommand, UsageError } from "./command.js";

/**
 * `wharf applications ...`: the catalog service of `/api/applications/create|list` (docs/compat.md
 * 7.8), run as an administrator (whoever can run it can read the data directory).
 */

export interface ApplicationsCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
}

export const APPLICATIONS_USAGE = `Usage:
  wharf applications list
  wharf applications create <name> [--release-usage required|optional|none]

--release-usage says whether builds need a release (default required; 'none' is the API's
Disabled). create prints the application as /api/applications/create answers it.`;

const OPTIONS = { "release-usage": { type: "string" } } as const;

const USAGES: Readonly<Record<string, ReleaseUsage>> = {
  required: "required",
  optional: "optional",
  none: "none",
  disabled: "none",
};

/** Runs one applications subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function applicationsCommand(args: string[], ctx: ApplicationsCommandContext): Promise<number> {
  return runCommand({ usage: APPLICATIONS_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run(
  { values, positionals }: CommandLine<typeof OPTIONS>,
  ctx: ApplicationsCommandContext,
): Promise<number> {
  const [subcommand, name, ...extra] = positionals;
  const { catalog } = createReleasesServices(ctx);
  switch (subcommand) {
    case "list": {
      if (name !== undefined || Object.keys(values).length > 0) {
        throw new UsageError("'applications list' takes no arguments");
      }
      const applications = await catalog.listApplications();
      if (applications.length === 0) {
        ctx.out("No applications.");
        return 0;
      }
      printTable(
        [
          ["ID", "NAME", "RELEASE USAGE", "BUILD NUMBERS", "ACTIVE"],
          ...applications.map((a) => [String(a.id), a.name, a.releaseUsage, a.buildNumberScheme, String(a.active)]),
        ],
        ctx.out,
      );
      return 0;
    }
    case "create": {
      if (name === undefined) throw new UsageError("'applications create' needs an application name");
      if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
      const given = values["release-usage"];
      const releaseUsage = given === undefined ? "required" : USAGES[given.toLowerCase()];
      if (releaseUsage === undefined) throw new UsageError("--release-usage takes required, optional or none");
      const created = await catalog.createApplication({
        name,
        active: true,
        releaseUsage,
        buildNumberScheme: "sequential",
      });
      ctx.out(JSON.stringify(applicationInfo(created), null, 2));
      return 0;
    }
    case undefined:
      throw new UsageError("a subcommand is required");
    default:
      throw new UsageError(`unknown subcommand '${subcommand}'`);
  }
}
