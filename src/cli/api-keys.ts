import type { FeedService } from "../areas/management/index.js";
import { type ApiKeyInput, createSecurityServices } from "../areas/security/service.js";
import type { Clock } from "../domain/clock.js";
import type { Db } from "../storage/database.js";
import { type CommandIo, type CommandLine, printTable, runCommand, UsageError } from "./command.js";

/**
 * `wharf api-keys ...`: the same service as `/api/api-keys/...`, run as an administrator (whoever
 * can run it can read the data directory). The key is printed once, on create, as the last line.
 */

export interface ApiKeysCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
  readonly feeds: FeedService;
}

export const API_KEYS_USAGE = `Usage:
  wharf api-keys list
  wharf api-keys create --type System --apis <api,...> [common options]
  wharf api-keys create --type Feed (--feed <name> | --feed-group <group>) --permissions <view,add,promote,delete> [common options]
  wharf api-keys create --type Personal --user <name> [common options]
  wharf api-keys delete <id>

Common options: --name <display name>, --description <text>, --expires <ISO 8601 date>,
  --logging None (request logging is not implemented yet), --key <key of your choosing (16+ characters, no ':')>.
System APIs: full-control, feeds, configuration, package-deployment, connector-health, releases,
  ci-badges, native, metrics.`;

const OPTIONS = {
  type: { type: "string" },
  apis: { type: "string" },
  feed: { type: "string" },
  "feed-group": { type: "string" },
  permissions: { type: "string" },
  user: { type: "string" },
  expires: { type: "string" },
  name: { type: "string" },
  description: { type: "string" },
  logging: { type: "string" },
  key: { type: "string" },
} as const;

/** Runs one api-keys subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function apiKeysCommand(args: string[], ctx: ApiKeysCommandContext): Promise<number> {
  return runCommand({ usage: API_KEYS_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run({ values, positionals }: CommandLine<typeof OPTIONS>, ctx: ApiKeysCommandContext): Promise<number> {
  const [subcommand, ...rest] = positionals;
  const options = Object.keys(values);
  const { apiKeys } = createSecurityServices(ctx);
  switch (subcommand) {
    case "list": {
      if (rest.length > 0 || options.length > 0) throw new UsageError("'api-keys list' takes no arguments");
      const keys = await apiKeys.list();
      if (keys.length === 0) {
        ctx.out("No API keys.");
        return 0;
      }
      printTable(
        [
          ["ID", "TYPE", "NAME", "SCOPE", "EXPIRES", "LAST USED"],
          ...keys.map((k) => [
            String(k.id),
            k.type,
            k.displayName ?? "",
            k.type === "System"
              ? (k.systemApis ?? []).join(",")
              : k.type === "Personal"
                ? `user ${k.user ?? "?"}`
                : `${k.feed ? `feed ${k.feed}` : `feed group ${k.feedGroup ?? "?"}`}: ${(k.packagePermissions ?? []).join(",")}`,
            k.expiration ?? "never",
            k.lastUsed ?? "never",
          ]),
        ],
        ctx.out,
      );
      return 0;
    }
    case "create": {
      if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`);
      if (values.type === undefined) throw new UsageError("'api-keys create' needs --type System, Feed or Personal");
      const input: ApiKeyInput = {
        type: values.type,
        systemApis: list(values.apis),
        packagePermissions: list(values.permissions),
        feed: values.feed,
        feedGroup: values["feed-group"],
        user: values.user,
        expiration: values.expires,
        displayName: values.name,
        description: values.description,
        logging: values.logging,
        key: values.key,
      };
      const created = await apiKeys.create(input);
      ctx.out(
        `Created ${created.type} API key ${created.id}${created.displayName ? ` (${created.displayName})` : ""}.`,
      );
      ctx.out("Store this key now; it is not shown again:");
      ctx.out(created.key);
      return 0;
    }
    case "delete": {
      if (options.length > 0) throw new UsageError(`--${options[0]} does not apply to 'api-keys delete'`);
      const [id, ...extra] = rest;
      if (id === undefined || extra.length > 0) throw new UsageError("'api-keys delete' needs exactly one key id");
      if (!/^\d{1,9}$/.test(id) || Number(id) < 1)
        throw new UsageError(`'${id}' is not a key id (see 'api-keys list')`);
      await apiKeys.delete(Number(id));
      ctx.out(`Deleted API key ${id}.`);
      return 0;
    }
    case undefined:
      throw new UsageError("a subcommand is required");
    default:
      throw new UsageError(`unknown subcommand '${subcommand}'`);
  }
}

function list(value: string | undefined): string[] | undefined {
  return value?.split(",").map((item) => item.trim());
}
