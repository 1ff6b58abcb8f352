import type { Readable } from "node:stream";
import { Agent, type Dispatcher } from "undici";
import type { ResolvedPackage } from "../drift/model.js";
import {
  AGENT_API_PREFIX,
  AGENT_JSON_TYPE,
  agentUserAgent,
  type LogLine,
  type PollAnswer,
  type WorkResult,
} from "./protocol.js";
import { parsePollAnswer } from "./work-shape.js";

/**
 * The agent's side of the HTTP protocol (protocol.ts), over one undici pool kept alive between
 * polls: an idle agent holds one connection with one long-poll open.
 */
export interface AgentConnection {
  /** Work the server has (empty after `waitSeconds` without any), and the server's name as Wharf knows it. */
  poll(waitSeconds: number, signal: AbortSignal): Promise<{ work: PollAnswer["work"]; serverName: string | undefined }>;
  postLog(workId: string, lines: readonly LogLine[], signal: AbortSignal): Promise<void>;
  postResult(workId: string, result: WorkResult, signal: AbortSignal): Promise<void>;
  resolvePackage(workId: string, itemKey: string, signal: AbortSignal): Promise<ResolvedPackage | undefined>;
  openPackage(workId: string, itemKey: string, version: string, signal: AbortSignal): Promise<Readable>;
  close(): Promise<void>;
}

/** Wharf answered with an error status; `message` is its plain-text answer. */
export class AgentHttpError extends Error {
  override readonly name = "AgentHttpError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ConnectionOptions {
  /** Wharf's base URL (https, or http to loopback); a path prefix is kept (Wharf behind a proxy). */
  readonly serverUrl: URL;
  readonly key: string;
  readonly version: string;
  /** PEM certificates to trust instead of the system's (a private CA). */
  readonly ca?: string | undefined;
}

/** An error's text is read up to this many bytes. */
const MAX_ERROR_TEXT = 4096;
/** A poll's answer is held by Wharf for `wait` seconds: headers may take that long, plus this. */
const POLL_SLACK_MS = 15_000;
const REQUEST_TIMEOUT_MS = 60_000;

export function openConnection(options: ConnectionOptions): AgentConnection {
  const dispatcher = new Agent({
    connections: 4,
    keepAliveTimeout: 60_000,
    ...(options.ca === undefined ? {} : { connect: { ca: options.ca } }),
  });
  const base = options.serverUrl.pathname.replace(/\/+$/, "");
  const headers = { authorization: `Bearer ${options.key}`, "user-agent": agentUserAgent(options.version) };

  async function send(
    method: "GET" | "POST",
    path: string,
    signal: AbortSignal,
    extra: { body?: unknown; timeoutMs?: number } = {},
  ): Promise<Dispatcher.ResponseData> {
    const timeoutMs = extra.timeoutMs ?? REQUEST_TIMEOUT_MS;
    const response = await dispatcher.request({
      origin: options.serverUrl.origin,
      path: `${base}${AGENT_API_PREFIX}${path}`,
      method,
      headers: extra.body === undefined ? headers : { ...headers, "content-type": AGENT_JSON_TYPE },
      ...(extra.body === undefined ? {} : { body: JSON.stringify(extra.body) }),
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    if (response.statusCode >= 400) throw new AgentHttpError(response.statusCode, await errorText(response));
    return response;
  }

  const work = (id: string, what: string) => `/work/${encodeURIComponent(id)}/${what}`;

  return {
    async poll(waitSeconds, signal) {
      const response = await send("GET", `/poll?wait=${waitSeconds}`, signal, {
        timeoutMs: waitSeconds * 1000 + POLL_SLACK_MS,
      });
      const named = response.headers["x-wharf-agent-server"];
      const serverName = typeof named === "string" ? decodeURIComponent(named) : undefined;
      if (response.statusCode === 204) {
        await response.body.dump();
        return { work: [], serverName };
      }
      return { work: parsePollAnswer(await response.body.json()).work, serverName };
    },
    async postLog(id, lines, signal) {
      await (await send("POST", work(id, "log"), signal, { body: { lines } })).body.dump();
    },
    async postResult(id, result, signal) {
      await (await send("POST", work(id, "result"), signal, { body: result })).body.dump();
    },
    async resolvePackage(id, itemKey, signal) {
      try {
        const response = await send("GET", `${work(id, "resolve")}?item=${encodeURIComponent(itemKey)}`, signal);
        return (await response.body.json()) as ResolvedPackage;
      } catch (error) {
        if (error instanceof AgentHttpError && error.status === 404) return undefined;
        throw error;
      }
    },
    async openPackage(id, itemKey, version, signal) {
      const query = `item=${encodeURIComponent(itemKey)}&version=${encodeURIComponent(version)}`;
      return (await send("GET", `${work(id, "package")}?${query}`, signal)).body;
    },
    close: () => dispatcher.close(),
  };
}

async function errorText(response: Dispatcher.ResponseData): Promise<string> {
  let text = "";
  try {
    for await (const chunk of response.body) {
      text += Buffer.from(chunk as Buffer).toString("utf8");
      if (text.length >= MAX_ERROR_TEXT) break;
    }
  } catch {
    // the text is a courtesy: the status says what happened
  }
  response.body.destroy();
  return text.slice(0, MAX_ERROR_TEXT).trim() || `HTTP ${response.statusCode}`;
}
