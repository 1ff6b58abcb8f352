import type { Config } from "../config.js";
import { serverTarget } from "./server-target.js";

/**
 * `wharf audit`: reads the running server's audit log (`GET /api/audit`, or `/api/audit/export`
 * for --jsonl) with the administrator's key in WHARF_API_KEY or --api-key.
 */

const USAGE = `Usage: wharf audit [--from <instant>] [--to <instant>] [--actor <name>] [--action <prefix>]
                   [--object <text>] [--limit <n>] [--after <id>] [--json | --jsonl]
                   [--server <url>] [--api-key <key>]

Lists audit records, newest first: one line each (time, actor, action, object, status, outcome),
--json the page as the API answers it, --jsonl every matching record as JSON lines (no paging).
--from/--to are ISO 8601 instants; --actor is exact, --action a prefix, --object a substring.
Asks the server at --server (default: where WHARF_HOST and WHARF_PORT say) with a full-control or
administrator key (Admin_ConfigureProGet) in --api-key or WHARF_API_KEY.`;

const FILTERS = ["from", "to", "actor", "action", "object", "limit", "after"] as const;

interface AuditContext {
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

interface AuditArgs {
  readonly query: URLSearchParams;
  readonly format: "text" | "json" | "jsonl";
  readonly server?: string;
  readonly apiKey?: string;
}

function parseArgs(args: readonly string[]): AuditArgs | string {
  const query = new URLSearchParams();
  let format: AuditArgs["format"] = "text";
  const given: { server?: string; apiKey?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--json" || arg === "--jsonl") {
      format = arg === "--json" ? "json" : "jsonl";
      continue;
    }
    const name = arg.startsWith("--") ? arg.slice(2) : "";
    if (!(FILTERS as readonly string[]).includes(name) && name !== "server" && name !== "api-key") {
      return `unknown argument '${arg}'`;
    }
    const value = args[++i];
    if (value === undefined || value.startsWith("--")) return `${arg} needs a value`;
    if (name === "server") given.server = value;
    else if (name === "api-key") given.apiKey = value;
    else query.set(name, value);
  }
  return { query, format, ...given };
}

interface Page {
  records: {
    at: string;
    actor: { kind: string; name: string };
    action: string;
    object: string;
    status: number;
    outcome: string;
  }[];
  next?: number;
}

export async function auditCommand(args: string[], ctx: AuditContext): Promise<number> {
  if (args.includes("--help") || args.includes("-h") || args[0] === "help") {
    ctx.out(USAGE);
    return 0;
  }
  const parsed = parseArgs(args);
  if (typeof parsed === "string") {
    ctx.err(`wharf audit: ${parsed}\n\n${USAGE}`);
    return 2;
  }
  const target = serverTarget(
    parsed,
    ctx.config,
    ctx.err,
    "wharf audit: give an administrator's key in WHARF_API_KEY or --api-key",
  );
  if (target === undefined) return 2;
  const search = parsed.query.toString();
  const url = `${target.base}/api/audit${parsed.format === "jsonl" ? "/export" : ""}${search === "" ? "" : `?${search}`}`;
  let response: Response;
  try {
    response = await fetch(url, { headers: { "X-ApiKey": target.apiKey } });
  } catch (error) {
    ctx.err(`wharf audit: ${url} could not be reached (${error instanceof Error ? error.message : String(error)})`);
    return 1;
  }
  const body = await response.text();
  if (response.status !== 200) {
    ctx.err(`wharf audit: the server answered ${response.status}: ${body}`);
    return 1;
  }
  if (parsed.format === "jsonl") {
    for (const line of body.split("\n")) if (line !== "") ctx.out(line);
    return 0;
  }
  if (parsed.format === "json") {
    ctx.out(body);
    return 0;
  }
  const page = JSON.parse(body) as Page;
  for (const r of page.records) {
    const actor = r.actor.name === "" ? r.actor.kind : r.actor.name;
    ctx.out(`${r.at}  ${actor}  ${r.action}  ${r.object === "" ? "-" : r.object}  ${r.status} ${r.outcome}`);
  }
  if (page.next !== undefined) ctx.out(`more: --after ${page.next}`);
  return 0;
}
