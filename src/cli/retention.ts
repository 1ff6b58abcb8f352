import type { Config } from "../config.js";
import { serverTarget, type ServerTarget } from "./server-target.js";

/**
 * `wharf retention preview <feed> [--json]` and `wharf retention run <feed>` (issue 17 section 1):
 * both ask the running server (`/api/retention/...`), which alone runs jobs, with a key that may
 * manage the feed in WHARF_API_KEY or --api-key, at WHARF_HOST/WHARF_PORT or --server. A run is
 * followed until it ends; its summary is printed.
 */

const USAGE = `Usage:
  wharf retention preview <feed> [--json] [--server <url>] [--api-key <key>]
  wharf retention run <feed> [--server <url>] [--api-key <key>]

preview   lists what a retention run of the feed would delete now and why (rule, last
          download, age, bytes), with totals; --json prints the server's answer as it is.
run       starts a run on the server and waits for it: prints its summary (versions deleted,
          bytes freed, versions skipped) and exits 0 when it succeeded, 1 otherwise.

Asks the running server at --server (default: where WHARF_HOST and WHARF_PORT say) with a key
holding Admin_ManageFeed on the feed in --api-key or WHARF_API_KEY.`;

export interface RetentionContext {
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  /** How often a run is polled (tests shorten it). */
  readonly pollMs?: number;
}

interface Args {
  readonly action: "preview" | "run";
  readonly feed: string;
  readonly json: boolean;
  readonly server?: string;
  readonly apiKey?: string;
}

interface PreviewJson {
  feed: string;
  unit: "versions" | "files";
  examined: number;
  versions: number;
  bytes: number;
  items: {
    group: string;
    name: string;
    version: string;
    path?: string;
    rule: number;
    reason: string;
    bytes: number;
    ageDays: number;
    lastDownloadedAt: string | null;
  }[];
}

interface RunJson {
  id: number;
  status: string;
  /** Only in GET runs/<id>. */
  unit?: "versions" | "files";
  versionsDeleted: number;
  bytesFreed: number;
  versionsSkipped: number;
  log?: string[];
}

function parseArgs(args: readonly string[]): Args | string {
  const [action, feed, ...rest] = args;
  if (action !== "preview" && action !== "run") {
    return action === undefined ? "a subcommand is needed" : `unknown subcommand '${action}'`;
  }
  if (feed === undefined || feed.startsWith("--")) return `${action} needs a feed name`;
  let json = false;
  let server: string | undefined;
  let apiKey: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === "--json" && action === "preview") json = true;
    else if (arg === "--server" || arg === "--api-key") {
      const value = rest[++i];
      if (value === undefined || value.startsWith("--")) return `${arg} needs a value`;
      if (arg === "--server") server = value;
      else apiKey = value;
    } else return `unknown argument '${arg}'`;
  }
  return {
    action,
    feed,
    json,
    ...(server === undefined ? {} : { server }),
    ...(apiKey === undefined ? {} : { apiKey }),
  };
}

export async function retentionCommand(args: string[], ctx: RetentionContext): Promise<number> {
  if (args.includes("--help") || args.includes("-h") || args[0] === "help") {
    ctx.out(USAGE);
    return 0;
  }
  const parsed = parseArgs(args);
  if (typeof parsed === "string") {
    ctx.err(`wharf retention: ${parsed}\n\n${USAGE}`);
    return 2;
  }
  const target = serverTarget(
    parsed,
    ctx.config,
    ctx.err,
    "wharf retention: give a key that may manage the feed in WHARF_API_KEY or --api-key",
  );
  if (target === undefined) return 2;
  try {
    return parsed.action === "preview" ? await preview(target, parsed, ctx) : await run(target, parsed, ctx);
  } catch (error) {
    ctx.err(`wharf retention: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

async function ask<T>(target: ServerTarget, method: string, path: string): Promise<T> {
  const url = `${target.base}${path}`;
  let response: Response;
  try {
    response = await fetch(url, { method, headers: { "X-ApiKey": target.apiKey } });
  } catch (error) {
    throw new Error(`${url} could not be reached (${error instanceof Error ? error.message : String(error)})`, {
      cause: error,
    });
  }
  const body = await response.text();
  if (response.status < 200 || response.status > 299)
    throw new Error(`the server answered ${response.status}: ${body}`);
  return JSON.parse(body) as T;
}

async function preview(target: ServerTarget, args: Args, ctx: RetentionContext): Promise<number> {
  const path = `/api/retention/preview?feed=${encodeURIComponent(args.feed)}`;
  const result = await ask<PreviewJson>(target, "GET", path);
  if (args.json) {
    ctx.out(JSON.stringify(result, null, 2));
    return 0;
  }
  const files = result.unit === "files";
  if (result.items.length > 0) {
    const what = files ? ["FILE"] : ["PACKAGE", "VERSION"];
    ctx.out([...what, "RULE", "AGE", "LAST DOWNLOAD", "BYTES", "WHY"].join("\t"));
  }
  for (const item of result.items) {
    const what = files
      ? [item.path ?? item.name]
      : [item.group === "" ? item.name : `${item.group}/${item.name}`, item.version];
    const download = item.lastDownloadedAt ?? "never";
    ctx.out([...what, item.rule, `${item.ageDays}d`, download, item.bytes, item.reason].join("\t"));
  }
  ctx.out(
    `${result.feed}: would delete ${result.versions} of ${result.examined} ${result.unit} (${result.bytes} bytes)`,
  );
  return 0;
}

async function run(target: ServerTarget, args: Args, ctx: RetentionContext): Promise<number> {
  const feed = encodeURIComponent(args.feed);
  const started = await ask<RunJson>(target, "POST", `/api/retention/run?feed=${feed}`);
  ctx.out(`run ${started.id} started`);
  let current = started;
  while (current.status === "pending" || current.status === "executing") {
    await new Promise((resolve) => setTimeout(resolve, ctx.pollMs ?? 500));
    current = await ask<RunJson>(target, "GET", `/api/retention/runs/${started.id}?feed=${feed}`);
  }
  for (const line of current.log ?? []) if (/ (warn|error): /.test(line)) ctx.err(line);
  ctx.out(
    `run ${current.id} ${current.status}: deleted ${current.versionsDeleted} ${current.unit ?? "versions"}, ` +
      `${current.bytesFreed} bytes freed, ${current.versionsSkipped} skipped`,
  );
  return current.status === "succeeded" ? 0 : 1;
}
