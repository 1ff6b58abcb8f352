import type { FeedService } from "../areas/management/index.js";
import { createSecurityServices, type UserInput } from "../areas/security/service.js";
import type { Clock } from "../domain/clock.js";
import type { Db } from "../storage/database.js";
import {
  type CommandIo,
  type CommandLine,
  type OptionValues,
  printTable,
  readStandardInput,
  runCommand,
  UsageError,
} from "./command.js";

/**
 * `wharf users ...` and `wharf users groups ...`: the same service as `/api/security/users|groups`,
 * run as an administrator. Prefer --password-stdin: a --password value is visible to other local
 * users in the process list and stays in shell history.
 */

export interface UsersCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
  readonly feeds: FeedService;
  /** The password for --password-stdin; reads standard input when absent (tests pass their own). */
  readonly readStdin?: () => Promise<string>;
}

export const USERS_USAGE = `Usage:
  wharf users list [--search <text>]
  wharf users add <name> [--password-stdin | --password <password>] [--email <e-mail>] [--display-name <name>] [--groups <group,...>]
  wharf users edit <name> [--password-stdin | --password <password>] [--email <e-mail>] [--display-name <name>] [--groups <group,...>]
  wharf users delete <name>
  wharf users groups list
  wharf users groups add <group> [--members <user,...>]
  wharf users groups delete <group>

On edit, an empty --email or --display-name removes it and --groups replaces the memberships
(--groups "" leaves every group). --members replaces a group's members.`;

const OPTIONS = {
  password: { type: "string" },
  "password-stdin": { type: "boolean" },
  email: { type: "string" },
  "display-name": { type: "string" },
  groups: { type: "string" },
  members: { type: "string" },
  search: { type: "string" },
} as const;

type Values = OptionValues<typeof OPTIONS>;

const ALLOWED: Record<string, readonly string[]> = {
  list: ["search"],
  add: ["password", "password-stdin", "email", "display-name", "groups"],
  edit: ["password", "password-stdin", "email", "display-name", "groups"],
  delete: [],
  "groups list": [],
  "groups add": ["members"],
  "groups delete": [],
};

/** Runs one users subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function usersCommand(args: string[], ctx: UsersCommandContext): Promise<number> {
  return runCommand({ usage: USERS_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run({ values, ...line }: CommandLine<typeof OPTIONS>, ctx: UsersCommandContext): Promise<number> {
  let positionals = line.positionals;
  let command = positionals[0];
  if (command === "groups") {
    command = `groups ${positionals[1] ?? "list"}`;
    positionals = positionals.slice(1);
  }
  if (command === undefined) throw new UsageError("a subcommand is required");
  const permitted = ALLOWED[command];
  if (permitted === undefined) throw new UsageError(`unknown subcommand '${command}'`);
  for (const option of Object.keys(values)) {
    if (!permitted.includes(option)) throw new UsageError(`--${option} does not apply to 'users ${command}'`);
  }
  const [, name, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const needsName = !["list", "groups list"].includes(command);
  if (needsName && name === undefined) throw new UsageError(`'users ${command}' needs a name`);
  if (!needsName && name !== undefined) throw new UsageError(`unexpected argument '${name}'`);
  const { users } = createSecurityServices(ctx);
  const target = name as string;

  switch (command) {
    case "list": {
      const list = await users.listUsers(values.search);
      if (list.length === 0) return say(ctx, "No users.");
      printTable(
        [
          ["NAME", "DISPLAY NAME", "E-MAIL", "GROUPS"],
          ...list.map((u) => [u.name, u.displayName ?? "", u.email ?? "", u.groups.join(",")]),
        ],
        ctx.out,
      );
      return 0;
    }
    case "add": {
      const user = await users.addUser({ ...(await userInput(values, ctx)), name: target });
      return say(ctx, `Added user '${user.name}'${user.groups.length > 0 ? ` in ${user.groups.join(", ")}` : ""}.`);
    }
    case "edit": {
      const input = await userInput(values, ctx);
      if (Object.keys(input).length === 0) throw new UsageError("nothing to change: give at least one option");
      const user = await users.editUser({ ...input, name: target });
      return say(ctx, `Updated user '${user.name}'.`);
    }
    case "delete":
      return say(ctx, (await users.deleteUser(target)) ? `Deleted user '${target}'.` : `No user is named '${target}'.`);
    case "groups list": {
      const groups = await users.listGroups();
      if (groups.length === 0) return say(ctx, "No groups.");
      printTable([["GROUP", "MEMBERS"], ...groups.map((g) => [g.name, g.users.join(",")])], ctx.out);
      return 0;
    }
    case "groups add": {
      const group = await users.saveGroup({ name: target, users: list(values.members) });
      return say(
        ctx,
        `Saved group '${group.name}' (${group.users.length} member${group.users.length === 1 ? "" : "s"}).`,
      );
    }
    default:
      return say(
        ctx,
        (await users.deleteGroup(target)) ? `Deleted group '${target}'.` : `No group is named '${target}'.`,
      );
  }
}

async function userInput(values: Values, ctx: UsersCommandContext): Promise<UserInput> {
  if (values.password !== undefined && values["password-stdin"]) {
    throw new UsageError("give --password or --password-stdin, not both");
  }
  let password = values.password;
  if (values["password-stdin"]) {
    password = (await (ctx.readStdin ?? readStandardInput)()).replace(/\r?\n$/, "");
    if (password === "") throw new UsageError("--password-stdin read an empty password");
  }
  return {
    ...(password === undefined ? {} : { password }),
    ...(values.email === undefined ? {} : { email: values.email }),
    ...(values["display-name"] === undefined ? {} : { displayName: values["display-name"] }),
    ...(values.groups === undefined ? {} : { groups: list(values.groups) }),
  };
}

/** A comma-separated list; an empty value is an empty list. */
function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

function say(ctx: UsersCommandContext, line: string): number {
  ctx.out(line);
  return 0;
}
