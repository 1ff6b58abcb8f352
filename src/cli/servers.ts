import type { ServerInput } from "../areas/configuration/servers-input.js";
import { type CommandLine, printTable, runCommand, UsageError } from "./command.js";
import {
  type InfrastructureCommandContext,
  infrastructureServices,
  readItemsFile,
  takeRepeated,
} from "./infrastructure-args.js";

/**
 * `wharf servers ...`: the servers service of `/api/infrastructure/servers/...` (docs/compat.md 8.2),
 * run as an administrator. create and update print the server as the API answers it; an agent's
 * key is printed once (create, agent-key) and stored only as its hash.
 */

export type ServersCommandContext = InfrastructureCommandContext;

export const SERVERS_USAGE = `Usage:
  wharf servers list
  wharf servers get <name>
  wharf servers create <name> --type local|agent|ssh [options]
  wharf servers update <name> [--name <new name>] [options]
  wharf servers delete <name>
  wharf servers agent-key <name>          issue a new agent key (the old one stops working)
  wharf servers revoke-agent-key <name>

Options:
  --root <dir>              local: a directory inside WHARF_DEPLOY_ROOT; ssh: the directory on the target
  --host <name> --port <n>  ssh: where to connect (port 22 by default)
  --credentials <name>      ssh: stored credentials (wharf credentials)
  --host-key <sha256>       ssh: the host key to pin (read from the host when not given)
  --temp <dir>              temporary directory on the target
  --role <name>             a role, in order (repeat for more; replaces the list on update)
  --environment <name>      an environment (repeat for more; replaces the list on update)
  --drift none|reportOnly|automaticallyRemediate
  --active true|false
  --items-file <file.json>  the server's own items (a JSON array; '-' reads standard input)

Names: up to 50 letters, digits, '-' and '_', starting with a letter, not ending in '-' or '_'.`;

const OPTIONS = {
  type: { type: "string" },
  name: { type: "string" },
  root: { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  credentials: { type: "string" },
  "host-key": { type: "string" },
  temp: { type: "string" },
  drift: { type: "string" },
  active: { type: "string" },
  "items-file": { type: "string" },
  role: { type: "string" },
  environment: { type: "string" },
} as const;
const REPEATED = ["role", "environment"] as const;
const SUBCOMMANDS = ["list", "get", "create", "update", "delete", "agent-key", "revoke-agent-key"];

/** Runs one servers subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function serversCommand(args: string[], ctx: ServersCommandContext): Promise<number> {
  // parseArgs keeps the last of a repeated option: the repeated ones are collected from args (valid by then).
  return runCommand({ usage: SERVERS_USAGE, options: OPTIONS }, args, ctx, (line, c) =>
    run(line, takeRepeated(args, REPEATED).values, c),
  );
}

async function run(
  { values, positionals }: CommandLine<typeof OPTIONS>,
  repeated: Map<string, string[]>,
  ctx: ServersCommandContext,
): Promise<number> {
  const [subcommand, name, ...extra] = positionals;
  if (subcommand === undefined) throw new UsageError("a subcommand is required");
  if (!SUBCOMMANDS.includes(subcommand)) throw new UsageError(`unknown subcommand '${subcommand}'`);
  const { servers } = infrastructureServices(ctx);
  const input = await inputFrom(values, repeated, ctx);
  if (subcommand !== "create" && subcommand !== "update" && Object.keys(input).length > 0) {
    throw new UsageError(`'servers ${subcommand}' takes no options`);
  }
  if (subcommand === "list") {
    if (name !== undefined) throw new UsageError("'servers list' takes no arguments");
    const all = await servers.list();
    if (all.length === 0) {
      ctx.out("No servers.");
      return 0;
    }
    printTable(
      [
        ["NAME", "TYPE", "DRIFT", "ACTIVE", "ROLES", "ENVIRONMENTS", "ITEMS"],
        ...all.map((s) => [
          s.name,
          s.serverType,
          s.drift,
          String(s.active),
          s.roles.join(","),
          s.environments.join(","),
          String(s.items.length),
        ]),
      ],
      ctx.out,
    );
    return 0;
  }
  if (name === undefined) throw new UsageError(`'servers ${subcommand}' needs a server name`);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  switch (subcommand) {
    case "get":
      ctx.out(JSON.stringify(await servers.get(name), null, 2));
      return 0;
    case "create": {
      if (input.serverType === undefined) throw new UsageError("'servers create' needs --type local, agent or ssh");
      if (values.name !== undefined) throw new UsageError("--name applies to 'servers update' (renaming)");
      const created = await servers.create(name, input);
      ctx.out(JSON.stringify(created, null, 2));
      if (created.agentKey !== undefined) {
        ctx.out("The agent key above is shown once; Wharf keeps only its hash. Run the agent with it:");
        ctx.out(`  WHARF_AGENT_KEY=<key> wharf agent --server <url> --root <dir>`);
      }
      return 0;
    }
    case "update":
      ctx.out(JSON.stringify(await servers.update(name, input), null, 2));
      return 0;
    case "delete":
      await servers.delete(name);
      ctx.out(`Deleted server '${name}'.`);
      return 0;
    case "agent-key": {
      const key = await servers.issueAgentKey(name);
      ctx.out(`Issued a new agent key for '${name}' (the previous one no longer works); shown once:`);
      ctx.out(key);
      return 0;
    }
    default:
      await servers.revokeAgentKey(name);
      ctx.out(`Revoked the agent key of '${name}'.`);
      return 0;
  }
}

async function inputFrom(
  values: CommandLine<typeof OPTIONS>["values"],
  repeated: Map<string, string[]>,
  ctx: ServersCommandContext,
): Promise<ServerInput> {
  const roles = repeated.get("role") ?? [];
  const environments = repeated.get("environment") ?? [];
  let port: number | undefined;
  if (values.port !== undefined) {
    if (!/^\d{1,5}$/.test(values.port)) throw new UsageError("--port must be a number");
    port = Number(values.port);
  }
  let active: boolean | undefined;
  if (values.active !== undefined) {
    if (!["true", "false"].includes(values.active)) throw new UsageError("--active must be true or false");
    active = values.active === "true";
  }
  return {
    ...(values.name !== undefined && { name: values.name }),
    ...(values.type !== undefined && { serverType: values.type }),
    ...(values.root !== undefined && { rootPath: values.root }),
    ...(values.host !== undefined && { hostName: values.host }),
    ...(port !== undefined && { port }),
    ...(values.credentials !== undefined && { credentialsName: values.credentials }),
    ...(values["host-key"] !== undefined && { hostKeySha256: values["host-key"] }),
    ...(values.temp !== undefined && { tempPath: values.temp }),
    ...(values.drift !== undefined && { drift: values.drift }),
    ...(active !== undefined && { active }),
    ...(roles.length > 0 && { roles }),
    ...(environments.length > 0 && { environments }),
    ...(values["items-file"] !== undefined && { items: await readItemsFile(values["items-file"], ctx) }),
  };
}
