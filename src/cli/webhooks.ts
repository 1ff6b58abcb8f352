import type { Config } from "../config.js";
import {
  type CommandLine,
  type OptionValues,
  printTable,
  readStandardInput,
  runCommand,
  UsageError,
} from "./command.js";
import { serverTarget, type ServerTarget } from "./server-target.js";

/**
 * `wharf webhooks ...` (issue 17 section 3): the webhooks API of the running server
 * (`/api/webhooks`), asked over HTTP as `wharf gc` does: only the server sends deliveries, and the
 * test ping must go from it. Key in --api-key or WHARF_API_KEY; server at --server or where
 * WHARF_HOST and WHARF_PORT say.
 */

const USAGE = `Usage:
  wharf webhooks list
  wharf webhooks create <name> --url <url template> [--feed <feed>] [--events <e1,e2>] [--method POST|PUT|PATCH]
                        [--headers <JSON object>] [--secret <secret>|-] [--inactive]
  wharf webhooks delete <id>
  wharf webhooks test <id>
  wharf webhooks deliveries <id> [--limit <n>]
Every subcommand takes [--server <url>] [--api-key <key>] (else WHARF_API_KEY).

create    a feed's webhook (--feed; needs Admin_ManageFeed there) or a global one (needs
          Admin_ConfigureProGet). The URL may hold {feed} {group} {name} {version} {event} in its
          path and query. Without --secret a secret is generated; it is printed this once
          (--secret - reads it from standard input). Events default to all.
test      sends a ping event now and prints how the receiver answered.
deliveries  the delivery log, newest first: state, attempts, last status or error.`;

const OPTIONS = {
  server: { type: "string" },
  "api-key": { type: "string" },
  url: { type: "string" },
  feed: { type: "string" },
  events: { type: "string" },
  method: { type: "string" },
  headers: { type: "string" },
  secret: { type: "string" },
  inactive: { type: "boolean" },
  limit: { type: "string" },
} as const;

type Values = OptionValues<typeof OPTIONS>;

export interface WebhooksContext {
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  /** Reads --secret - (tests replace it). */
  readonly readSecret?: () => Promise<string>;
}

const ALLOWED: Record<string, readonly (keyof Values)[]> = {
  list: [],
  create: ["url", "feed", "events", "method", "headers", "secret", "inactive"],
  delete: [],
  test: [],
  deliveries: ["limit"],
};

/** Runs one webhooks subcommand; 0 done, 1 refused by the server (or unreachable), 2 bad arguments. */
export function webhooksCommand(args: string[], ctx: WebhooksContext): Promise<number> {
  return runCommand({ usage: USAGE, options: OPTIONS }, args, ctx, run);
}

async function run({ values, positionals }: CommandLine<typeof OPTIONS>, ctx: WebhooksContext): Promise<number> {
  const [subcommand, subject, ...extra] = positionals;
  if (subcommand === undefined) throw new UsageError("a subcommand is required");
  const permitted = ALLOWED[subcommand];
  if (permitted === undefined) throw new UsageError(`unknown subcommand '${subcommand}'`);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  for (const option of Object.keys(values) as (keyof Values)[]) {
    if (option !== "server" && option !== "api-key" && !permitted.includes(option))
      throw new UsageError(`--${option} does not apply to 'webhooks ${subcommand}'`);
  }
  if (subcommand === "list") {
    if (subject !== undefined) throw new UsageError(`unexpected argument '${subject}'`);
  } else if (subject === undefined) {
    throw new UsageError(`'webhooks ${subcommand}' needs ${subcommand === "create" ? "a name" : "a webhook id"}`);
  } else if (subcommand !== "create" && !/^[1-9]\d{0,15}$/.test(subject)) {
    throw new UsageError(`'${subject}' is not a webhook id (a number, as 'webhooks list' shows)`);
  }
  const body = subcommand === "create" ? await createBody(subject ?? "", values, ctx) : undefined;
  const given = {
    ...(values.server === undefined ? {} : { server: values.server }),
    ...(values["api-key"] === undefined ? {} : { apiKey: values["api-key"] }),
  };
  const target = serverTarget(
    given,
    ctx.config,
    ctx.err,
    "error: give a key that may manage webhooks in WHARF_API_KEY or --api-key",
  );
  if (target === undefined) return 2;
  try {
    return await ask(client(target), subcommand, subject ?? "", values, body, ctx);
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    ctx.err(`error: ${error.message}`);
    return 1;
  }
}

async function ask(
  api: ReturnType<typeof client>,
  subcommand: string,
  subject: string,
  values: Values,
  body: Record<string, unknown> | undefined,
  ctx: WebhooksContext,
): Promise<number> {
  switch (subcommand) {
    case "list":
      printWebhooks((await api("GET", "/api/webhooks")) as WebhookJson[], ctx.out);
      return 0;
    case "create": {
      const created = (await api("POST", "/api/webhooks", body)) as WebhookJson & { secret: string };
      ctx.out(`Created webhook ${created.id} '${created.name}'.`);
      ctx.out(`Secret (shown this once; receivers verify X-Wharf-Signature with it): ${created.secret}`);
      return 0;
    }
    case "delete":
      await api("DELETE", `/api/webhooks/${subject}`);
      ctx.out(`Deleted webhook ${subject}.`);
      return 0;
    case "test": {
      const delivery = (await api("POST", `/api/webhooks/${subject}/test`)) as DeliveryJson;
      ctx.out(`${delivery.state}: ${outcome(delivery)}`);
      return delivery.state === "succeeded" ? 0 : 1;
    }
    default: {
      const limit = values.limit ?? "50";
      if (!/^\d{1,3}$/.test(limit)) throw new UsageError("--limit takes a number from 1 to 500");
      printDeliveries(
        (await api("GET", `/api/webhooks/${subject}/deliveries?limit=${limit}`)) as DeliveryJson[],
        ctx.out,
      );
      return 0;
    }
  }
}

async function createBody(name: string, values: Values, ctx: WebhooksContext): Promise<Record<string, unknown>> {
  if (values.url === undefined) throw new UsageError("'webhooks create' needs --url");
  let headers: unknown;
  if (values.headers !== undefined) {
    try {
      headers = JSON.parse(values.headers);
    } catch {
      throw new UsageError('--headers takes a JSON object, e.g. \'{"X-Token":"..."}\'');
    }
    if (headers === null || typeof headers !== "object" || Array.isArray(headers))
      throw new UsageError("--headers takes a JSON object");
  }
  const secret = values.secret === "-" ? (await (ctx.readSecret ?? readStandardInput)()).trim() : values.secret;
  return {
    name,
    url: values.url,
    ...(values.feed === undefined ? {} : { feed: values.feed }),
    ...(values.events === undefined
      ? {}
      : {
          events: values.events
            .split(",")
            .map((e) => e.trim())
            .filter((e) => e !== ""),
        }),
    ...(values.method === undefined ? {} : { method: values.method }),
    ...(headers === undefined ? {} : { headers }),
    ...(secret === undefined ? {} : { secret }),
    ...(values.inactive === true ? { active: false } : {}),
  };
}

/** The server refused, or could not be reached: printed, exit 1. */
class Refused extends Error {}

/** Calls the API; a refusal becomes a Refused carrying the server's message. */
function client(target: ServerTarget) {
  return async (method: string, path: string, body?: object): Promise<unknown> => {
    let response: Response;
    try {
      response = await fetch(`${target.base}${path}`, {
        method,
        headers: { "X-ApiKey": target.apiKey, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new Refused(`${target.base} could not be reached (${why})`);
    }
    const text = await response.text();
    if (!response.ok) throw new Refused(`the server answered ${response.status}: ${text}`);
    return text === "" ? undefined : JSON.parse(text);
  };
}

interface WebhookJson {
  id: number;
  name: string;
  feed: string | null;
  events: string[];
  url: string;
  method: string;
  active: boolean;
}

interface DeliveryJson {
  id: number;
  event: string;
  state: string;
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  response: { status: number | null; error: string | null; durationMs: number | null };
}

function printWebhooks(list: readonly WebhookJson[], out: (line: string) => void): void {
  if (list.length === 0) return out("No webhooks.");
  printTable(
    [
      ["ID", "NAME", "FEED", "ACTIVE", "METHOD", "URL", "EVENTS"],
      ...list.map((w) => [
        String(w.id),
        w.name,
        w.feed ?? "(all)",
        String(w.active),
        w.method,
        w.url,
        w.events.join(","),
      ]),
    ],
    out,
  );
}

function outcome(delivery: DeliveryJson): string {
  const { status, error, durationMs } = delivery.response;
  const answer =
    status === null ? (error ?? "no answer") : `HTTP ${status}${error === null || status < 300 ? "" : ` (${error})`}`;
  return durationMs === null ? answer : `${answer} in ${durationMs} ms`;
}

function printDeliveries(list: readonly DeliveryJson[], out: (line: string) => void): void {
  if (list.length === 0) return out("No deliveries.");
  printTable(
    [
      ["ID", "CREATED", "EVENT", "STATE", "ATTEMPTS", "LAST ANSWER", "NEXT ATTEMPT"],
      ...list.map((d) => [
        String(d.id),
        d.createdAt,
        d.event,
        d.state,
        String(d.attempts),
        d.attempts === 0 ? "-" : outcome(d),
        d.nextAttemptAt ?? "-",
      ]),
    ],
    out,
  );
}
