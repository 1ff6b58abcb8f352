import type { RoleInput } from "../areas/configuration/servers-input.js";
import { type CommandLine, printTable, runCommand, UsageError } from "./command.js";
import {
  type InfrastructureCommandContext,
  infrastructureServices,
  readItemsFile,
  takeRepeated,
} from "./infrastructure-args.js";

/**
 * `wharf roles ...`: the roles service of `/api/infrastructure/roles/...` (docs/compat.md 8.2), run
 * as an administrator. A role carries items (a JSON file) and may depend on other roles, which are
 * applied first; a cycle is refused.
 */

export type RolesCommandContext = InfrastructureCommandContext;

export const ROLES_USAGE = `Usage:
  wharf roles list
  wharf roles get <name>
  wharf roles create <name> [--description <text>] [--depends-on <role>]... [--items-file <file.json>]
  wharf roles update <name> [--name <new name>] [--description <text>] [--depends-on <role>]... [--no-dependencies]
                            [--items-file <file.json>]
  wharf roles delete <name>          (refused while servers or roles use it)

--items-file holds a JSON array of items ('-' reads standard input), for example:
  [{ "type": "directory", "path": "/srv/web", "mode": "0755" },
   { "type": "file", "path": "/srv/web/app.conf", "template": "port=$Port" }]`;

const OPTIONS = {
  name: { type: "string" },
  description: { type: "string" },
  "depends-on": { type: "string" },
  "no-dependencies": { type: "boolean" },
  "items-file": { type: "string" },
} as const;
const SUBCOMMANDS = ["list", "get", "create", "update", "delete"];

/** Runs one roles subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function rolesCommand(args: string[], ctx: RolesCommandContext): Promise<number> {
  // parseArgs keeps the last of a repeated option: --depends-on values are collected from args.
  return runCommand({ usage: ROLES_USAGE, options: OPTIONS }, args, ctx, (line, c) =>
    run(line, takeRepeated(args, ["depends-on"]).values.get("depends-on") ?? [], c),
  );
}

async function run(
  { values, positionals }: CommandLine<typeof OPTIONS>,
  dependsOn: string[],
  ctx: RolesCommandContext,
): Promise<number> {
  const [subcommand, name, ...extra] = positionals;
  if (subcommand === undefined) throw new UsageError("a subcommand is required");
  if (!SUBCOMMANDS.includes(subcommand)) throw new UsageError(`unknown subcommand '${subcommand}'`);
  if (values["no-dependencies"] && dependsOn.length > 0) {
    throw new UsageError("give either --depends-on or --no-dependencies");
  }
  const input: RoleInput = {
    ...(values.name !== undefined && { name: values.name }),
    ...(values.description !== undefined && { description: values.description }),
    ...(dependsOn.length > 0 && { dependsOn }),
    ...(values["no-dependencies"] === true && { dependsOn: [] }),
    ...(values["items-file"] !== undefined && { items: await readItemsFile(values["items-file"], ctx) }),
  };
  if (subcommand !== "create" && subcommand !== "update" && Object.keys(input).length > 0) {
    throw new UsageError(`'roles ${subcommand}' takes no options`);
  }
  const { roles } = infrastructureServices(ctx);
  if (subcommand === "list") {
    if (name !== undefined) throw new UsageError("'roles list' takes no arguments");
    const all = await roles.list();
    if (all.length === 0) {
      ctx.out("No roles.");
      return 0;
    }
    printTable(
      [
        ["NAME", "DEPENDS ON", "ITEMS", "DESCRIPTION"],
        ...all.map((r) => [r.name, r.dependsOn.join(","), String(r.items.length), r.description ?? ""]),
      ],
      ctx.out,
    );
    return 0;
  }
  if (name === undefined) throw new UsageError(`'roles ${subcommand}' needs a role name`);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  switch (subcommand) {
    case "get":
      ctx.out(JSON.stringify(await roles.get(name), null, 2));
      return 0;
    case "create":
      if (values.name !== undefined) throw new UsageError("--name applies to 'roles update' (renaming)");
      ctx.out(JSON.stringify(await roles.create(name, input), null, 2));
      return 0;
    case "update":
      ctx.out(JSON.stringify(await roles.update(name, input), null, 2));
      return 0;
    default:
      await roles.delete(name);
      ctx.out(`Deleted role '${name}'.`);
      return 0;
  }
}
