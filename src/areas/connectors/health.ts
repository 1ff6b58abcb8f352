import { STATUS_CODES } from "node:http";
import { createGuardedFetch, MAX_REDIRECTS, type ResolveHost } from "../../net/fetch-guard.js";
import type { ProxySettings } from "../../net/outbound-proxy.js";
import type { Authorization } from "./credentials.js";
import type { Connector } from "./model.js";

/**
 * Connector health (docs/seed-api.md area D; docs/compat.md 6.1): how one upstream is probed, and the timer
 * that probes every connector now and then. The service decides what is due and stores results.
 */

/** What one probe found. `errorMessage` is shown to administrators as it is. */
export type ProbeResult = { readonly state: "healthy" } | { readonly state: "error"; readonly errorMessage: string };

/** Never rejects: every failure, the caller's abort included, is an `error` result. */
export type HealthProbe = (connector: Connector, signal?: AbortSignal) => Promise<ProbeResult>;

export interface HealthProbeOptions {
  /** WHARF_FETCH_ALLOW_PRIVATE: an upstream on a private or loopback address is an administrator's decision. */
  readonly allowPrivate: boolean;
  /** HTTP_PROXY, HTTPS_PROXY and NO_PROXY (config.ts). */
  readonly proxy?: ProxySettings | undefined;
  /** The connector's Basic credentials (credentials.ts); a password that does not decrypt is an `error` result. */
  readonly authorization: Authorization;
  /** Replaces system DNS (tests). */
  readonly resolve?: ResolveHost;
}

const MAX_MESSAGE_LENGTH = 1000;

/**
 * Probes with GET through the fetch guard (docs/PRODUCT.md security baseline), bounded by the
 * connector's own timeout and sending its Basic credentials (the guard drops them on a redirect
 * to another origin). A universal connector is asked for one package (`<url>/packages?count=1`,
 * docs/compat.md 2.2), which proves the feed API answers, not only the host. Connectors of other types
 * are stored only, and Wharf does not speak their protocols: their URL itself is fetched, which
 * shows at least that it is reachable. Any 2xx is healthy; the body is never read.
 */
export function createHealthProbe(options: HealthProbeOptions): HealthProbe {
  return async (connector, signal) => {
    const fetch = createGuardedFetch({
      allowPrivate: options.allowPrivate,
      timeoutMs: connector.timeoutSeconds * 1000,
      // The body is discarded unread, so a large declared length (an index page) is no reason to fail.
      maxBytes: Number.MAX_SAFE_INTEGER,
      maxRedirects: MAX_REDIRECTS,
      proxy: options.proxy,
      ...(options.resolve ? { resolve: options.resolve } : {}),
    });
    const universal = connector.feedType === "universal";
    const url = universal ? `${connector.url}/packages?count=1` : connector.url;
    try {
      const response = await fetch(url, {
        headers: { accept: universal ? "application/json" : "*/*", ...options.authorization(connector) },
        ...(signal ? { signal } : {}),
      });
      response.discard();
      const { status } = response;
      if (status >= 200 && status < 300) return { state: "healthy" };
      return { state: "error", errorMessage: `HTTP ${status} ${STATUS_CODES[status] ?? ""}`.trim() };
    } catch (error) {
      return { state: "error", errorMessage: messageOf(error) };
    }
  };
}

/** The guard's DomainErrors are written for people; anything else is cut short. */
function messageOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const text = message.trim() === "" ? "The health check failed." : message;
  return text.length > MAX_MESSAGE_LENGTH ? `${text.slice(0, MAX_MESSAGE_LENGTH)}...` : text;
}

/** Runs `tick` now and then between start and stop; see createHealthScheduler. */
export interface HealthScheduler {
  start(): void;
  /** Stops the timer and aborts a running tick; resolves when it has finished. */
  stop(): Promise<void>;
  /** One tick now (what the timer does), unless one is already running. Never rejects. */
  run(): Promise<void>;
}

export interface HealthSchedulerOptions {
  /** WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES in ms; 0: start() does nothing. */
  readonly intervalMs: number;
  /** Checks what is due; aborted by stop(). */
  readonly tick: (signal: AbortSignal) => Promise<void>;
  readonly onError: (error: unknown) => void;
}

/**
 * Ticks every interval, or every minute when the interval is longer: a tick checks only the
 * connectors whose last check is older than the interval (or that were never checked), so a new
 * connector or a restart is caught up within a minute, while each upstream is still asked once
 * per interval. Timers are unref'd (they never keep the process alive); a tick never overlaps
 * another, and its errors go to onError, never out.
 */
export function createHealthScheduler(options: HealthSchedulerOptions): HealthScheduler {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let controller = new AbortController();

  const run = (): Promise<void> => {
    if (running) return running;
    const { signal } = controller;
    running = (async () => {
      try {
        await options.tick(signal);
      } catch (error) {
        // After stop() the database may be closed under a running tick: not worth a log line.
        if (!signal.aborted) options.onError(error);
      }
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  return {
    start() {
      if (timer !== undefined || options.intervalMs <= 0) return;
      controller = new AbortController();
      timer = setInterval(() => void run(), Math.min(options.intervalMs, 60_000)).unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      controller.abort();
      await running;
    },
    run,
  };
}
