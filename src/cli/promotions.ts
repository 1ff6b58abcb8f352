import type { Config } from "../config.js";
import { type CommandLine, type CommandOptions, printTable, runCommand, UsageError } from "./command.js";
import { serverTarget } from "./server-target.js";

/**
 * `wharf promote`, `wharf promotions list` and `wharf repackage` (issue 17 section 2): they ask the
 * running server (POST /api/promotions/promote, GET /api/promotions/list, POST
 * /api/repackaging/repackage) at --server (default: where WHARF_HOST and WHARF_PORT say) with the key
 * in --api-key or WHARF_API_KEY, so that the server decides access and writes the record and the
 * event as it does for any client.
 */

const COMMON = "[--server <url>] [--api-key <key>]";

export const PROMOTE_USAGE = `Usage: wharf promote <fromFeed> <[group/]name> <version> <toFeed> [--comments <text>] ${COMMON}

Saves the version of the package in <toFeed> as it is, recording where it came from, who promoted it,
when and why. <version> may be 'latest' or 'latest-stable'. Needs view on <fromFeed> and
accept-promotions (a feed key's 'promote') or add on <toFeed>.`;

export const PROMOTIONS_USAGE = `Usage: wharf promotions list [--feed <name>] [--from-feed <name>] [--to-feed <name>]
         [--package <[group/]name>] [--version <version>] [--count <n>] ${COMMON}

Lists promotions newest first (--feed: into or out of that feed).`;

export const REPACKAGE_USAGE = `Usage: wharf repackage <feed> <[group/]name> <version> <newVersion> [--to-feed <name>] [--comments <text>] ${COMMON}

Publishes the version as <newVersion> (e.g. 1.2.0-rc.3 as 1.2.0) in --to-feed, else <feed>: its
upack.json names the new version and records the original in repackageHistory. Needs view on <feed>
and add on the target.`;

export interface PromotionsCommandContext {
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

const TARGET_OPTIONS = { server: { type: "string" }, "api-key": { type: "string" } } as const;

type Line<T extends CommandOptions> = CommandLine<T & typeof TARGET_OPTIONS>;

/** `group/name` split at the last slash (docs/compat.md 2.12). */
function packageOf(text: string): { group: string; name: string } {
  const slash = text.lastIndexOf("/");
  return slash < 0 ? { group: "", name: text } : { group: text.slice(0, slash), name: text.slice(slash + 1) };
}

/** The positionals, exactly `names.length` of them. */
function positionals(line: { positionals: string[] }, names: readonly string[]): string[] {
  const given = line.positionals;
  if (given.length < names.length) throw new UsageError(`missing <${names[given.length]}>`);
  if (given.length > names.length) throw new UsageError(`unexpected argument '${given[names.length]}'`);
  return given;
}

/** A server's 200 answer, or the exit code after what went wrong was printed (2: no key, 1: refused or unreachable). */
type Answer<T> = { readonly json: T } | { readonly exit: 1 | 2 };

/** Sends one request to the server. */
async function ask<T>(
  line: { values: { server?: string; "api-key"?: string } },
  ctx: PromotionsCommandContext,
  method: "GET" | "POST",
  path: string,
  body?: object,
): Promise<Answer<T>> {
  const { server, "api-key": apiKey } = line.values;
  const target = serverTarget(
    { ...(server === undefined ? {} : { server }), ...(apiKey === undefined ? {} : { apiKey }) },
    ctx.config,
    ctx.err,
    "error: give an API key in WHARF_API_KEY or --api-key",
  );
  if (target === undefined) return { exit: 2 };
  const url = `${target.base}${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: { "X-ApiKey": target.apiKey, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    ctx.err(`error: ${target.base} could not be reached (${error instanceof Error ? error.message : String(error)})`);
    return { exit: 1 };
  }
  const text = await response.text();
  if (response.status !== 200) {
    ctx.err(`error: the server answered ${response.status}: ${text}`);
    return { exit: 1 };
  }
  return { json: JSON.parse(text) as T };
}

const displayOf = (group: string, name: string) => (group === "" ? name : `${group}/${name}`);

const PROMOTE_OPTIONS = { ...TARGET_OPTIONS, comments: { type: "string" } } as const;

export function promoteCommand(args: string[], ctx: PromotionsCommandContext): Promise<number> {
  return runCommand({ usage: PROMOTE_USAGE, options: PROMOTE_OPTIONS }, args, ctx, async (line) => {
    const [fromFeed, pkg, version, toFeed] = positionals(line, ["fromFeed", "package", "version", "toFeed"]);
    const answer = await ask<Record<string, string>>(line, ctx, "POST", "/api/promotions/promote", {
      fromFeed,
      toFeed,
      ...packageOf(pkg as string),
      version,
      ...(line.values.comments === undefined ? {} : { comments: line.values.comments }),
    });
    if ("exit" in answer) return answer.exit;
    const record = answer.json;
    ctx.out(
      `Promoted ${displayOf(record.group ?? "", record.name ?? "")} ${record.version} from ${record.fromFeed} to ${record.toFeed}.`,
    );
    return 0;
  });
}

const LIST_OPTIONS = {
  ...TARGET_OPTIONS,
  feed: { type: "string" },
  "from-feed": { type: "string" },
  "to-feed": { type: "string" },
  package: { type: "string" },
  version: { type: "string" },
  count: { type: "string" },
} as const;

export function promotionsCommand(args: string[], ctx: PromotionsCommandContext): Promise<number> {
  return runCommand(
    { usage: PROMOTIONS_USAGE, options: LIST_OPTIONS },
    args,
    ctx,
    async (line: Line<typeof LIST_OPTIONS>) => {
      const [subcommand] = positionals(line, ["subcommand"]);
      if (subcommand !== "list") throw new UsageError(`unknown subcommand '${subcommand}'`);
      const { values } = line;
      const query = new URLSearchParams();
      const add = (name: string, value: string | undefined) => value !== undefined && query.set(name, value);
      add("feed", values.feed);
      add("fromFeed", values["from-feed"]);
      add("toFeed", values["to-feed"]);
      if (values.package !== undefined) {
        const { group, name } = packageOf(values.package);
        add("group", group);
        add("name", name);
      }
      add("version", values.version);
      add("count", values.count);
      const answer = await ask<Array<Record<string, string>>>(line, ctx, "GET", `/api/promotions/list?${query}`);
      if ("exit" in answer) return answer.exit;
      const list = answer.json;
      if (list.length === 0) {
        ctx.out("No promotions.");
        return 0;
      }
      printTable(
        [
          ["DATE", "PACKAGE", "VERSION", "FROM", "TO", "BY", "COMMENTS"],
          ...list.map((row) => [
            row.date ?? "",
            displayOf(row.group ?? "", row.name ?? ""),
            row.version ?? "",
            row.fromFeed ?? "",
            row.toFeed ?? "",
            row.promotedBy ?? "",
            (row.comments ?? "").replace(/\s+/g, " "),
          ]),
        ],
        ctx.out,
      );
      return 0;
    },
  );
}

const REPACKAGE_OPTIONS = { ...TARGET_OPTIONS, "to-feed": { type: "string" }, comments: { type: "string" } } as const;

export function repackageCommand(args: string[], ctx: PromotionsCommandContext): Promise<number> {
  return runCommand({ usage: REPACKAGE_USAGE, options: REPACKAGE_OPTIONS }, args, ctx, async (line) => {
    const [feed, pkg, version, newVersion] = positionals(line, ["feed", "package", "version", "newVersion"]);
    const { values } = line;
    const answer = await ask<Record<string, string>>(line, ctx, "POST", "/api/repackaging/repackage", {
      feed,
      ...packageOf(pkg as string),
      version,
      newVersion,
      ...(values["to-feed"] === undefined ? {} : { toFeed: values["to-feed"] }),
      ...(values.comments === undefined ? {} : { comments: values.comments }),
    });
    if ("exit" in answer) return answer.exit;
    const record = answer.json;
    ctx.out(
      `Repackaged ${displayOf(record.group ?? "", record.name ?? "")} ${record.fromVersion} (${record.fromFeed}) as ${record.version} in ${record.feed}.`,
    );
    return 0;
  });
}
