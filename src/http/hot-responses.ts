import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import type { AccessNeed } from "../domain/principal.js";
import { VersionedCache } from "../storage/change-watch.js";
import type { CacheVersion } from "../storage/metadata-db.js";
import { type Authenticator, declaredNeed } from "./auth.js";
import { credentialsFromHeaders } from "./credentials.js";
import type { RequestMetrics } from "./metrics.js";

/**
 * Replays of whole responses to hot GETs (a CI farm downloading the same small package), answered
 * before Fastify sees the request (server-factory.ts). For a 10 KiB package, Fastify's own work
 * per request (request and reply objects, routing, the hook chain, per-request logger and header
 * bookkeeping) costs about as much as the socket write; this path does only what the answer
 * needs, and each of those steps is the full path's own:
 * - the response is one a route kept (`keep`) after sending it for the same raw URL: its status,
 *   headers and body as sent, minus the request id, which is new per request;
 * - it is valid until the database changes (ChangeWatch: any write here or in another process),
 *   like every cache of the lookups that built it;
 * - the route's declared access need is checked again, for the caller's own credentials, by the
 *   authenticator from its caches (Authenticator.allowsFromMemory);
 * - the request is counted in the metrics, logged as Fastify logs it, and the route's own side
 *   effect (a download count) runs.
 * Anything else goes the full way, unchanged: a request with a query string (it may carry a key),
 * a body, a Range or a condition; credentials, scopes or grants not in the caches; an entry that
 * is missing or stale; a route's own veto (`mayReplay`). The full path then answers and decides,
 * errors included: a replay is never an error and never a refusal.
 */
export interface HotResponses {
  /**
   * Keeps the 200 just sent to `request` for replays. Only for a response that depends on nothing
   * but the URL and the database: the route's declared need is the one check a replay repeats,
   * so a route whose answer also depends on the caller (a remote pull needing Feeds_PullPackage)
   * must not keep it. `version` is the ChangeWatch version taken before the route read anything,
   * so that a write during the request leaves the entry stale.
   */
  keep(request: FastifyRequest, reply: FastifyReply, kept: KeptResponse): void;
  /** The version to keep a response under: take it before reading anything the response shows. */
  version(): string;
  /** Answers the request and returns true, or returns false having touched nothing. */
  replay(request: IncomingMessage, response: ServerResponse): boolean;
  /** Replays stop for good (the app is closing: Fastify then answers 503 as it should). */
  stop(): void;
}

export interface KeptResponse {
  readonly version: string;
  readonly body: Buffer;
  /** The route's check of a request's own headers, beyond the ones every replay checks. */
  readonly mayReplay?: (request: IncomingMessage) => boolean;
  /** Run after each replay, as the route runs it after sending (a download count). */
  readonly replayed?: (log: FastifyBaseLogger) => void;
}

export interface HotResponsesDeps {
  readonly watch: CacheVersion;
  readonly authenticator: Authenticator;
  readonly metrics: RequestMetrics;
  readonly log: FastifyBaseLogger;
  /** Bound of the kept responses; default 512. */
  readonly maxEntries?: number;
  /**
   * Largest body kept; default 64 KiB. Replays pay off where per-request work outweighs the
   * write, and the bound keeps what entries hold (buffers the small-blob cache may have let go)
   * to maxEntries x maxBodyBytes: 32 MiB by default.
   */
  readonly maxBodyBytes?: number;
}

interface Entry extends KeptResponse {
  readonly route: string;
  readonly need: AccessNeed;
  /** Flat name/value pairs, as sent; the request id's value is at `requestIdAt`. */
  readonly headers: readonly string[];
  readonly requestIdAt: number;
}

const REQUEST_ID = "x-request-id";
const OTHER_PROCESSES_MAX_AGE_MS = 1;
/** Levels at which Fastify logs every request ("incoming request", "request completed"). */
const LOGS_REQUESTS = new Set(["trace", "debug", "info"]);
/** Request headers that change the answer (conditions, ranges) or are credentials or data the full path reads elsewhere. */
const FULL_PATH_HEADERS = [
  "range",
  "if-range",
  "if-match",
  "if-none-match",
  "if-modified-since",
  "if-unmodified-since",
  "content-length",
  "transfer-encoding",
  "content-type",
];

/**
 * A response whose bytes depend on the request's Accept-Encoding (encoded, or one that might be:
 * http/compression.ts) is not kept: a replay checks no Accept-Encoding, and the kept body is the
 * unencoded one, so it must never be sent under another variant's headers.
 */
function varies(name: string, value: string | number): boolean {
  if (name === "content-encoding") return String(value) !== "identity";
  return name === "vary" && String(value).toLowerCase().includes("accept-encoding");
}

export function createHotResponses(deps: HotResponsesDeps): HotResponses {
  const { watch, authenticator, metrics, log } = deps;
  const entries = new VersionedCache<string, Entry>(deps.maxEntries ?? 512);
  const maxBodyBytes = deps.maxBodyBytes ?? 64 * 1024;
  let stopped = false;

  function replayable(request: IncomingMessage): boolean {
    if (request.method !== "GET" || request.url === undefined || request.url.includes("?")) return false;
    const headers = request.headers;
    for (const name of FULL_PATH_HEADERS) if (headers[name] !== undefined) return false;
    return true;
  }

  return {
    keep(request, reply, kept) {
      const need = declaredNeed(request);
      if (stopped || kept.body.length > maxBodyBytes || reply.statusCode !== 200 || need === undefined) return;
      if (!replayable(request.raw)) return;
      const headers: string[] = [];
      let requestIdAt = -1;
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value === undefined || Array.isArray(value)) return; // not one plain value: not kept
        if (varies(name, value)) return;
        if (name === REQUEST_ID) requestIdAt = headers.length + 1;
        headers.push(name, String(value));
      }
      if (requestIdAt < 0) return;
      // Kept only when nothing was written since the route started reading: it is current now.
      const current = watch.version();
      if (current !== kept.version) return;
      const url = request.raw.url as string;
      entries.get(url, current); // moves the cache to the current version, so that it takes the entry
      entries.set(url, current, {
        ...kept,
        route: request.routeOptions.url ?? "unmatched",
        need,
        headers,
        requestIdAt,
      });
    },

    version: () => watch.version(),

    replay(request, response) {
      const url = request.url as string;
      // Cheap refusals first: most requests are not replays, and they pay nothing more.
      if (stopped || !entries.mayHave(url) || !replayable(request)) return false;
      const started = process.hrtime.bigint();
      // The full path's onRequest hook (app.ts) asks SQLite about other processes' commits on every
      // request; that read takes SQLite's shared lock, and under load it cost more than the rest of
      // a replay. Replays share one answer for up to a millisecond: a key revoked or a package
      // deleted by another process (the CLI) is seen by every replay from a millisecond after its
      // commit on, and this process's own writes at once (ChangeWatch).
      watch.refreshUnlessWithin(OTHER_PROCESSES_MAX_AGE_MS);
      const entry = entries.get(url, watch.version());
      if (entry === undefined || entry.mayReplay?.(request) === false) return false;
      if (!authenticator.allowsFromMemory(credentialsFromHeaders(request.headers), entry.need, request)) return false;

      const requestId = randomUUID();
      const headers = entry.headers.slice();
      headers[entry.requestIdAt] = requestId;
      const infoLogged = LOGS_REQUESTS.has(log.level);
      if (infoLogged) {
        const req = { method: "GET", url, host: request.headers.host, ip: request.socket.remoteAddress };
        log.info({ reqId: requestId, req }, "incoming request");
      }
      response.writeHead(200, headers);
      response.end(entry.body);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (infoLogged) {
        log.info({ reqId: requestId, res: { statusCode: 200 }, responseTime: seconds * 1000 }, "request completed");
      }
      metrics.record({
        method: "GET",
        route: entry.route,
        status: 200,
        seconds,
        bytesIn: 0,
        bytesOut: entry.body.length,
        replayed: true,
      });
      entry.replayed?.(log);
      return true;
    },

    stop() {
      stopped = true;
    },
  };
}
