import type { FeedService } from "../areas/management/index.js";
import { ANONYMOUS_NAME } from "../areas/security/model.js";
import { createSecurityServices } from "../areas/security/service.js";
import type { Clock } from "../domain/clock.js";
import type { Db } from "../storage/database.js";
import { type CommandIo, type CommandLine, runCommand, UsageError } from "./command.js";

/**
 * `wharf permissions ...`: the same service as `/api/security/permissions|tasks`, run as an
 * administrator. Grants or denies a task to a user, a group or Anonymous (everyone).
 */

export interface PermissionsCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
  readonly feeds: FeedService;
}

export const PERMISSIONS_USAGE = `Usage:
  wharf permissions list
  wharf permissions add (--user <name> | --group <name> | --anonymous) --task <task> [--feed <feed> | --feed-group <group>] [--deny]
  wharf permissions remove <id>
  wharf permissions tasks

Built-in tasks: "Administer", "Manage Feeds", "Publish Packages", "View & Download Packages".
Without --feed or --feed-group a permission applies everywhere; a deny wins over any grant.`;

const OPTIONS = {
  user: { type: "string" },
  group: { type: "string" },
  anonymous: { type: "boolean" },
  task: { type: "string" },
  feed: { type: "string" },
  "feed-group": { type: "string" },
  deny: { type: "boolean" },
} as const;

/** Runs one permissions subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function permissionsCommand(args: string[], ctx: PermissionsCommandContext): Promise<number> {
  return runCommand({ usage: PERMISSIONS_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run(
  { values, positionals }: CommandLine<typeof OPTIONS>,
  ctx: PermissionsCommandContext,
): Promise<number> {
  const [subcommand, ...rest] = positionals;
  const options = Object.keys(values);
  if (subcommand !== "add" && options.length > 0) {
    throw new UsageError(`--${options[0]} does not apply to 'permissions ${subcommand ?? ""}'`.trimEnd());
  }
  const { permissions } = createSecurityServices(ctx);
  switch (subcommand) {
    case "list": {
      if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
      const list = await permissions.listPermissions();
      if (list.length === 0) {
        ctx.out("No permissions: nobody but full-control API keys can do anything.");
        return 0;
      }
      for (const p of list) ctx.out(describe(p));
      return 0;
    }
    case "add": {
      if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
      const principals = [values.user, values.group, values.anonymous ? true : undefined].filter(
        (v) => v !== undefined,
      );
      if (principals.length !== 1) throw new UsageError("give exactly one of --user, --group or --anonymous");
      if (values.task === undefined) throw new UsageError("'permissions add' needs --task");
      if (values.feed !== undefined && values["feed-group"] !== undefined) {
        throw new UsageError("give --feed or --feed-group, not both");
      }
      const added = await permissions.addPermission({
        user: values.anonymous ? ANONYMOUS_NAME : values.user,
        group: values.group,
        task: values.task,
        feed: values.feed,
        feedGroup: values["feed-group"],
        deny: values.deny === true,
      });
      ctx.out(`Added permission ${describe(added)}`);
      return 0;
    }
    case "remove": {
      const [id, ...extra] = rest;
      if (id === undefined || extra.length > 0)
        throw new UsageError("'permissions remove' needs exactly one permission id");
      if (!/^\d{1,9}$/.test(id) || Number(id) < 1)
        throw new UsageError(`'${id}' is not a permission id (see 'permissions list')`);
      await permissions.removePermission(Number(id));
      ctx.out(`Removed permission ${id}.`);
      return 0;
    }
    case "tasks": {
      if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
      for (const task of await permissions.listTasks()) {
        const kind = [task.builtIn ? "built-in" : "custom", task.feedScoped ? "feed-scopable" : "global"].join(", ");
        ctx.out(`${task.name} (${kind}): ${task.attributes.join(", ")}`);
      }
      return 0;
    }
    case undefined:
      throw new UsageError("a subcommand is required");
    default:
      throw new UsageError(`unknown subcommand '${subcommand}'`);
  }
}

/** `3: deny View & Download Packages on feed main for group Developers`, as pgutil prints them. */
function describe(p: {
  id: number;
  user?: string;
  group?: string;
  task: string;
  feed?: string;
  feedGroup?: string;
  deny: boolean;
}): string {
  const where = p.feed ? `on feed ${p.feed}` : p.feedGroup ? `on feed group ${p.feedGroup}` : "globally";
  const who = p.group !== undefined ? `group ${p.group}` : `user ${p.user ?? ANONYMOUS_NAME}`;
  return `${p.id}: ${p.deny ? "deny" : "allow"} ${p.task} ${where} for ${who}`;
}
