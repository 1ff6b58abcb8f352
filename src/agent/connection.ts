import type { IncomingMessage } from "node:http";
import type { Readable } from "node:stream";
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
 * The agent's side of the HTTP protocol (protocol.ts), over one keep-alive connection pool: an
 * idle agent holds one connection with one long-poll open. Node's own http/https client, not the
 * undici package: importing undici alone costs some 30 MB of resident memory, half of what an idle
 * agent may use (bench/agent.ts).
 *
 * Neither is imported as an ES module: `import "node:http"` builds the module's named exports by
 * reading every property, and three of them (WebSocket, CloseEvent, MessageEvent) are getters
 * that load Node's own copy of undici, some 13 MB that the agent never uses.
 * process.getBuiltinModule hands over the CommonJS exports as they are; node:https (TLS) loads
 * only when the URL is https.
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
/** A poll's answer is at most this large (10,000 items with their content, which Wharf bounds). */
const MAX_JSON_ANSWER = 512 * 1024 * 1024;
/** A poll is held by Wharf for `wait` seconds: its connection may be silent that long, plus this. */
const POLL_SLACK_MS = 15_000;
/** Longest silence of a connection (no byte either way) before the request fails. */
const IDLE_TIMEOUT_MS = 60_000;

export function openConnection(options: ConnectionOptions): AgentConnection {
  const { serverUrl } = options;
  const secure = serverUrl.protocol === "https:";
  const https = secure ? process.getBuiltinModule("node:https") : undefined;
  const client = https ?? process.getBuiltinModule("node:http");
  const pool =
    https !== undefined
      ? new https.Agent({ keepAlive: true, maxSockets: 4, ...(options.ca === undefined ? {} : { ca: options.ca }) })
      : new client.Agent({ keepAlive: true, maxSockets: 4 });
  const base = serverUrl.pathname.replace(/\/+$/, "");
  const host = serverUrl.hostname.replace(/^\[|\]$/g, "");
  const port = serverUrl.port === "" ? (secure ? 443 : 80) : Number(serverUrl.port);
  const headers = { authorization: `Bearer ${options.key}`, "user-agent": agentUserAgent(options.version) };

  /** Sends one request; resolves with a 2xx response (its body unread), rejects with AgentHttpError otherwise. */
  function send(
    method: "GET" | "POST",
    path: string,
    signal: AbortSignal,
    extra: { body?: unknown; idleMs?: number } = {},
  ): Promise<IncomingMessage> {
    const payload = extra.body === undefined ? undefined : Buffer.from(JSON.stringify(extra.body));
    return new Promise<IncomingMessage>((resolve, reject) => {
      const request = client.request(
        {
          host,
          port,
          method,
          path: `${base}${AGENT_API_PREFIX}${path}`,
          agent: pool,
          signal,
          timeout: extra.idleMs ?? IDLE_TIMEOUT_MS,
          headers:
            payload === undefined
              ? headers
              : { ...headers, "content-type": AGENT_JSON_TYPE, "content-length": String(payload.length) },
        },
        (response) => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(response);
          void readText(response, MAX_ERROR_TEXT).then(
            (text) => reject(new AgentHttpError(status, text.trim() || `HTTP ${status}`)),
            () => reject(new AgentHttpError(status, `HTTP ${status}`)),
          );
        },
      );
      request.on("timeout", () => request.destroy(new Error(`no answer from ${serverUrl.host} in time`)));
      request.on("error", reject);
      request.end(payload);
    });
  }

  const work = (id: string, what: string) => `/work/${encodeURIComponent(id)}/${what}`;

  return {
    async poll(waitSeconds, signal) {
      const response = await send("GET", `/poll?wait=${waitSeconds}`, signal, {
        idleMs: waitSeconds * 1000 + POLL_SLACK_MS,
      });
      const named = response.headers["x-wharf-agent-server"];
      const serverName = typeof named === "string" ? decodeURIComponent(named) : undefined;
      if (response.statusCode === 204) {
        response.resume();
        return { work: [], serverName };
      }
      return { work: parsePollAnswer(JSON.parse(await readText(response, MAX_JSON_ANSWER, true))).work, serverName };
    },
    async postLog(id, lines, signal) {
      (await send("POST", work(id, "log"), signal, { body: { lines } })).resume();
    },
    async postResult(id, result, signal) {
      (await send("POST", work(id, "result"), signal, { body: result })).resume();
    },
    async resolvePackage(id, itemKey, signal) {
      try {
        const response = await send("GET", `${work(id, "resolve")}?item=${encodeURIComponent(itemKey)}`, signal);
        return JSON.parse(await readText(response, MAX_JSON_ANSWER, true)) as ResolvedPackage;
      } catch (error) {
        if (error instanceof AgentHttpError && error.status === 404) return undefined;
        throw error;
      }
    },
    async openPackage(id, itemKey, version, signal) {
      const query = `item=${encodeURIComponent(itemKey)}&version=${encodeURIComponent(version)}`;
      return send("GET", `${work(id, "package")}?${query}`, signal);
    },
    close() {
      pool.destroy();
      return Promise.resolve();
    },
  };
}

/** The body as UTF-8 text, up to `max` bytes: cut there, or (`strict`) refused. */
async function readText(response: IncomingMessage, max: number, strict = false): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > max) {
      response.destroy();
      if (strict) throw new Error(`Wharf's answer is larger than ${max} bytes.`);
      chunks.push(buffer.subarray(0, buffer.length - (size - max)));
      break;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}
