import { PassThrough, type Readable } from "node:stream";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { exceedsJsonDepth } from "../../domain/json-depth.js";
import {
  createGuardedFetch,
  FETCH_SETTINGS,
  type GuardedResponse,
  MAX_REDIRECTS,
  type ResolveHost,
} from "../../net/fetch-guard.js";
import { VersionedCache } from "../../storage/change-watch.js";
import { byDatabase, cacheVersionOf, type MetadataDb } from "../../storage/metadata-db.js";
import { type CircuitBreaker, createCircuitBreaker } from "./circuit.js";
import { type CachedAnswer, createMetadataCacheRepository } from "./metadata-cache.js";
import { createPostgresMetadataCacheRepository } from "./metadata-cache-postgres.js";
import type { Connector } from "./model.js";
import type { ConnectorService } from "./service.js";
import { circuitOpen, connectorError, httpError, invalidAnswer, timedOut } from "./upstream-errors.js";

/**
 * What a universal feed asks of the remote universal feeds its connectors point at (another Wharf
 * or a ProGet; docs/compat.md 2.2-2.4, 5.3): metadata (`packages`, `versions`, `search`) and package
 * files. Every request goes through the fetch guard (docs/PRODUCT.md security baseline), with the
 * connector's Basic credentials and timeout, behind a circuit breaker per connector (circuit.ts).
 *
 * Metadata answers are kept in `connector_metadata` when the connector's metadataCacheEnabled is
 * on: a 200 is served without asking again for metadataCacheMinutes, and after that whenever the
 * upstream fails, is slow or its circuit is open (stale, but better than nothing: docs/PRODUCT.md's
 * "keep serving when the upstream is down"); metadataCacheMinutes 0 thus means "always ask, but
 * fall back". A 404 is kept for WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS at most (and never longer
 * than metadataCacheMinutes), and never served after that, failing upstream or not: a package
 * published upstream must show up soon, and a stale "not found" is never better than an honest
 * 502; so when that time is 0, a 404 is not kept at all (it only drops what was kept for the
 * request). At most metadataCacheCount answers are kept per connector, 404s evicted first: they
 * must not push out the 200s that keep a feed serving while its upstream is down.
 *
 * Errors are DomainErrors naming the connector: `gateway_timeout` (504) when the upstream did not
 * answer in time, `bad_gateway` (502) for everything else: refused by the guard, unreachable,
 * an HTTP error, an invalid answer, or an open circuit. Never a 500.
 */
export interface ConnectorUpstreams {
  /**
   * The connectors a feed's `connectors` setting names, in that order, that Wharf can ask:
   * universal ones (others are stored only). Names that match no connector are skipped.
   * Remembered until the database changes (ChangeWatch); shared between callers: never change it.
   */
  connectorsOf(names: readonly string[]): Promise<readonly Connector[]>;
  /**
   * The upstream's JSON answer, `found: false` for its 404. Concurrent callers of one request
   * share one parsed body: read it, never change it.
   */
  metadata(connector: Connector, request: MetadataRequest): Promise<MetadataAnswer>;
  /**
   * The package file, streamed: undefined when the upstream answers 404. The body fails (with
   * an error naming the connector) when the upstream sends nothing for the connector's timeout,
   * breaks off, or sends more than WHARF_FETCH_MAX_BYTES; destroying it closes the connection.
   */
  download(connector: Connector, id: UpstreamVersionId): Promise<UpstreamDownload | undefined>;
}

export interface MetadataRequest {
  readonly endpoint: "packages" | "versions" | "search";
  /** Sent in this order; undefined members are left out. */
  readonly query: Readonly<Record<string, string | undefined>>;
}

export type MetadataAnswer =
  { readonly found: true; readonly body: unknown; readonly stale: boolean } | { readonly found: false };

export interface UpstreamVersionId {
  readonly group: string;
  readonly name: string;
  readonly version: string;
}

export interface UpstreamDownload {
  readonly body: Readable;
  /** Content-Length as the upstream declared it. */
  readonly length: number | undefined;
}

export interface ConnectorUpstreamsDeps {
  /**
   * The node's metadata store: the metadata cache's repository is its database's, and the connector
   * lists are remembered until its change version moves (on PostgreSQL, the node's change feed:
   * a connector changed through another node is seen once its notification arrives).
   */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Pick<
    Config,
    "fetchAllowPrivate" | "fetchMaxBytes" | "fetchTimeoutMs" | "connectorNegativeCacheMs" | "outboundProxy"
  >;
  readonly connectors: Pick<ConnectorService, "findConnector" | "authorization">;
  /** Replaces system DNS (tests). */
  readonly resolve?: ResolveHost;
  readonly circuit?: CircuitBreaker;
}

/** A `versions` answer of a package with 10,000 versions is a few MiB; this leaves room for more. */
const METADATA_MAX_BYTES = 32 * 1024 * 1024;
/** A download is bounded by the connector's timeout between chunks, and by this as a whole. */
const DOWNLOAD_MIN_TOTAL_MS = 60 * 60_000;
/** Distinct `connectors` settings remembered: one per feed with connectors, in practice. */
const MAX_CONNECTOR_LISTS = 256;

export function createConnectorUpstreams(deps: ConnectorUpstreamsDeps): ConnectorUpstreams {
  const { clock, config } = deps;
  const cache = byDatabase(deps.db, createMetadataCacheRepository, createPostgresMetadataCacheRepository);
  const circuit = deps.circuit ?? createCircuitBreaker();
  const nowMs = () => clock.now().getTime();
  /** Requests for the same answer share one upstream request, and its parsed body. */
  const inFlight = new Map<string, Promise<MetadataAnswer>>();
  const watch = cacheVersionOf(deps.db);
  const connectorLists = new VersionedCache<string, readonly Connector[]>(MAX_CONNECTOR_LISTS);

  const guard = (timeoutMs: number, maxBytes: number, maxBytesSetting?: string) =>
    createGuardedFetch({
      allowPrivate: config.fetchAllowPrivate,
      timeoutMs,
      maxBytes,
      ...(maxBytesSetting === undefined ? {} : { settings: { maxBytes: maxBytesSetting } }),
      maxRedirects: MAX_REDIRECTS,
      proxy: config.outboundProxy,
      ...(deps.resolve ? { resolve: deps.resolve } : {}),
    });

  function freshFor(connector: Connector, answer: CachedAnswer): number {
    const minutes = connector.metadataCacheMinutes * 60_000;
    return answer.status === 200 ? minutes : Math.min(minutes, config.connectorNegativeCacheMs);
  }

  const ageOf = (answer: CachedAnswer) => nowMs() - Date.parse(answer.fetchedAt);

  /** With the connector's Basic credentials; throws when its password does not decrypt. */
  const requestHeaders = (connector: Connector): Record<string, string> => ({
    accept: "application/json",
    ...deps.connectors.authorization(connector),
  });

  /** Asks the upstream once (through the circuit); stores what it answered when caching is on. */
  async function ask(connector: Connector, request: MetadataRequest, key: string): Promise<MetadataAnswer> {
    // First: a password that does not decrypt is no failure of the upstream's (no circuit count).
    const headers = requestHeaders(connector);
    const circuitKey = circuitKeyOf(connector);
    const admission = circuit.admit(circuitKey, nowMs());
    if (!admission.admitted) throw circuitOpen(connector, admission);
    const failed = (error: unknown) => {
      circuit.failed(circuitKey, nowMs());
      return connectorError(connector, error);
    };
    let response: GuardedResponse;
    try {
      const fetch = guard(connector.timeoutSeconds * 1000, METADATA_MAX_BYTES);
      response = await fetch(`${connector.url}/${key}`, { headers });
    } catch (error) {
      throw failed(error);
    }
    if (response.status !== 200 && response.status !== 404) {
      response.discard();
      if (countsAsFailure(response.status)) throw failed(httpError(connector, response.status));
      circuit.succeeded(circuitKey);
      throw httpError(connector, response.status);
    }
    let read = { text: "", json: undefined as unknown };
    try {
      if (response.status === 404) response.discard();
      else read = await readJson(connector, response);
    } catch (error) {
      throw failed(error);
    }
    circuit.succeeded(circuitKey);
    if (connector.metadataCacheEnabled) {
      const answer = { status: response.status, body: read.text, fetchedAt: clock.now().toISOString() };
      // A 404 that would never be served (see above) is not kept; an answer kept for the request is outdated.
      if (answer.status === 200 || freshFor(connector, answer) > 0) {
        await cache.store(connector.id, key, answer, connector.metadataCacheCount);
      } else {
        await cache.forget(connector.id, key);
      }
    }
    return response.status === 200 ? { found: true, body: read.json, stale: false } : { found: false };
  }

  return {
    async connectorsOf(names) {
      // Taken before the lookups read anything: a write during them leaves the entry already invalid.
      const version = watch.version();
      const key = JSON.stringify(names);
      const hit = connectorLists.get(key, version);
      if (hit !== undefined) return hit;
      const found = await Promise.all(names.map((name) => deps.connectors.findConnector(name)));
      const usable = found.filter((c): c is Connector => c !== undefined && c.feedType === "universal");
      connectorLists.set(key, version, usable);
      return usable;
    },

    async metadata(connector, request) {
      const key = requestKey(request);
      const cached = connector.metadataCacheEnabled ? await cache.find(connector.id, key) : undefined;
      if (cached !== undefined && ageOf(cached) < freshFor(connector, cached)) return answerOf(cached, false);
      const sharedKey = `${circuitKeyOf(connector)}\0${key}`;
      let pending = inFlight.get(sharedKey);
      if (pending === undefined) {
        pending = ask(connector, request, key).finally(() => inFlight.delete(sharedKey));
        inFlight.set(sharedKey, pending);
      }
      try {
        return await pending;
      } catch (error) {
        // Only a positive answer is served stale; an expired "not found" is not (see above).
        if (cached?.status === 200) return answerOf(cached, true);
        throw error;
      }
    },

    async download(connector, id) {
      const headers = { ...requestHeaders(connector), accept: "application/zip, application/octet-stream, */*" };
      const circuitKey = circuitKeyOf(connector);
      const admission = circuit.admit(circuitKey, nowMs());
      if (!admission.admitted) throw circuitOpen(connector, admission);
      const timeoutMs = connector.timeoutSeconds * 1000;
      const fetch = guard(
        Math.max(config.fetchTimeoutMs, DOWNLOAD_MIN_TOTAL_MS),
        config.fetchMaxBytes,
        FETCH_SETTINGS.maxBytes,
      );
      // The guard's own bound covers the whole body; the connector's timeout bounds the wait for
      // the response head here, and every pause in the body below.
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(timedOut(connector, timeoutMs)), timeoutMs);
      let response: GuardedResponse;
      try {
        response = await fetch(downloadUrl(connector, id), {
          headers,
          signal: controller.signal,
        });
      } catch (error) {
        circuit.failed(circuitKey, nowMs());
        throw connectorError(connector, error);
      } finally {
        clearTimeout(timer);
      }
      if (response.status === 404) {
        response.discard();
        circuit.succeeded(circuitKey);
        return undefined;
      }
      if (response.status !== 200) {
        response.discard();
        if (countsAsFailure(response.status)) circuit.failed(circuitKey, nowMs());
        else circuit.succeeded(circuitKey);
        throw httpError(connector, response.status);
      }
      circuit.succeeded(circuitKey);
      const header = response.headers.get("content-length");
      const declared = header === null ? Number.NaN : Number(header);
      return {
        body: namedBody(connector, response.body, timeoutMs),
        length: Number.isSafeInteger(declared) && declared >= 0 ? declared : undefined,
      };
    },
  };
}

/** A changed URL is another upstream: its circuit starts closed. */
const circuitKeyOf = (connector: Connector) => `${connector.id}\0${connector.url}`;

/** `versions?group=&name=`: the path and query as sent, which is also the cache key. */
function requestKey(request: MetadataRequest): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query)) if (value !== undefined) query.append(name, value);
  const text = query.toString();
  return text === "" ? request.endpoint : `${request.endpoint}?${text}`;
}

function answerOf(answer: CachedAnswer, stale: boolean): MetadataAnswer {
  return answer.status === 200 ? { found: true, body: JSON.parse(answer.body) as unknown, stale } : { found: false };
}

/** Group segments keep their '/', as Inedo.UPack sends them (docs/compat.md 2.4); '+' of build metadata is escaped. */
function downloadUrl(connector: Connector, id: UpstreamVersionId): string {
  const segments = [...(id.group === "" ? [] : id.group.split("/")), id.name, id.version];
  return `${connector.url}/download/${segments.map(encodeURIComponent).join("/")}`;
}

/** The body as text (what the cache keeps) and as the JSON it was checked to be. */
async function readJson(connector: Connector, response: GuardedResponse): Promise<{ text: string; json: unknown }> {
  const chunks: Buffer[] = [];
  for await (const chunk of response.body as AsyncIterable<Buffer>) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalidAnswer(connector, "is not JSON");
  }
  if (typeof json !== "object" || json === null || exceedsJsonDepth(json)) {
    throw invalidAnswer(connector, "is not a JSON object or array of the universal feed API");
  }
  return { text, json };
}

/** 4xx other than 404 (bad credentials, say) are the upstream's considered answer, not an outage. */
function countsAsFailure(status: number): boolean {
  return status >= 500 || status === 429 || status < 200;
}

/**
 * The body as a stream whose errors name the connector, failing when nothing arrives for
 * `idleMs`. Destroying it (the client went away, say) closes the upstream connection.
 */
function namedBody(connector: Connector, body: Readable, idleMs: number): Readable {
  const out = new PassThrough();
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    // Paused means our reader is slow (backpressure), not the upstream: that wait is not its fault.
    timer = setTimeout(() => (body.isPaused() ? arm() : body.destroy(timedOut(connector, idleMs))), idleMs);
  };
  arm();
  body.on("data", arm);
  body.on("error", (error) => out.destroy(connectorError(connector, error)));
  body.on("close", () => clearTimeout(timer));
  out.on("close", () => {
    clearTimeout(timer);
    if (!body.destroyed) body.destroy();
  });
  body.pipe(out);
  return out;
}
