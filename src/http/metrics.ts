import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, type Metric, Registry } from "prom-client";
import { z } from "zod";
import type { BlobStore } from "../storage/blob-store.js";

/** Blob store size is a filesystem walk: compute it at most this often. */
const BLOB_SIZE_TTL_MS = 30_000;

/** Counts one finished request: what the onResponse hook does, and the hot path (front-door.ts) too. */
export interface RequestMetrics {
  record(request: FinishedRequest): void;
}

export interface FinishedRequest {
  readonly method: string;
  /** The route's template (`/upack/:feed/download/*`), never the raw URL. */
  readonly route: string;
  readonly status: number;
  readonly seconds: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** Answered by a replay of a kept response (hot-responses.ts), not by the route itself. */
  readonly replayed?: boolean;
}

let runtimeRegistry: Registry | undefined;

/**
 * The process's own metrics (CPU, resident memory, heap, event-loop lag, GC, handles), prom-client's
 * standard set: one per process, since they describe the process, and its event-loop and GC
 * observers are made once however many apps a process builds (tests build hundreds).
 */
function runtimeMetrics(): Registry {
  if (runtimeRegistry === undefined) {
    runtimeRegistry = new Registry();
    collectDefaultMetrics({ register: runtimeRegistry });
  }
  return runtimeRegistry;
}

/**
 * Prometheus metrics, one registry per app (tests build many apps in one process). Requests are
 * labelled by route template, never by raw URL, so that label cardinality stays bounded.
 */
export function registerMetrics(
  app: FastifyInstance,
  blobs: BlobStore,
  others: readonly Metric[] = [],
): RequestMetrics & { readonly forgetBlobStoreBytes: () => void } {
  const registry = new Registry();
  // Metrics other parts keep themselves (sign-ins: areas/security/auth-metrics.ts).
  for (const metric of others) registry.registerMetric(metric);
  const labelNames = ["method", "route", "status"] as const;
  const requests = new Counter({
    name: "wharf_http_requests_total",
    help: "HTTP requests",
    labelNames,
    registers: [registry],
  });
  const durations = new Histogram({
    name: "wharf_http_request_duration_seconds",
    help: "HTTP request duration",
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const requestBytes = new Counter({
    name: "wharf_http_request_bytes_total",
    help: "Request body bytes (by Content-Length)",
    labelNames,
    registers: [registry],
  });
  const responseBytes = new Counter({
    name: "wharf_http_response_bytes_total",
    help: "Response body bytes (by Content-Length)",
    labelNames,
    registers: [registry],
  });
  const replays = new Counter({
    name: "wharf_http_replayed_responses_total",
    help: "Responses replayed from memory before routing (hot small downloads), also counted in the request metrics",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  let cachedSize: { bytes: number; at: number } | undefined;
  new Gauge({
    name: "wharf_blob_store_bytes",
    help: "Bytes held by the blob store",
    registers: [registry],
    async collect() {
      if (!cachedSize || Date.now() - cachedSize.at > BLOB_SIZE_TTL_MS) {
        cachedSize = { bytes: await blobs.totalBytes(), at: Date.now() };
      }
      this.set(cachedSize.bytes);
    },
  });

  const metrics: RequestMetrics & { readonly forgetBlobStoreBytes: () => void } = {
    // Garbage collection deleted blobs: the next scrape measures the store again.
    forgetBlobStoreBytes: () => {
      cachedSize = undefined;
    },
    record({ method, route, status, seconds, bytesIn, bytesOut, replayed }) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      durations.observe(labels, seconds);
      if (bytesIn > 0) requestBytes.inc(labels, bytesIn);
      if (bytesOut > 0) responseBytes.inc(labels, bytesOut);
      if (replayed === true) replays.inc({ route });
    },
  };

  // Synchronous (callback) hook: no promise and no extra microtask on every request.
  app.addHook("onResponse", (request, reply, done) => {
    try {
      metrics.record({
        method: request.method,
        route: request.routeOptions.url ?? "unmatched",
        status: reply.statusCode,
        seconds: reply.elapsedTime / 1000,
        bytesIn: Number(request.headers["content-length"] ?? 0),
        bytesOut: Number(reply.getHeader("content-length") ?? 0),
      });
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  });

  app.get(
    "/metrics",
    {
      schema: {
        summary: "Prometheus metrics (full-control keys, keys with the metrics scope, administrators)",
        tags: ["operations"],
        response: { 200: z.string().describe("Prometheus text exposition format") },
      },
      config: { access: { need: { api: "metrics", attribute: "Admin_ConfigureProGet" } } },
    },
    async (_request, reply) => {
      // Merged at each scrape (rare), so that metrics registered after start-up are included too.
      const all = Registry.merge([runtimeMetrics(), registry]);
      return reply.type(all.contentType).send(await all.metrics());
    },
  );
  return metrics;
}
