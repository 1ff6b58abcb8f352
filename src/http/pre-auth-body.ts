import type { Readable } from "node:stream";
import { Transform } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { Gauge, type Metric } from "prom-client";
import { DomainError } from "../domain/errors.js";
import { declaredNeed } from "./auth.js";
import type { ConnectionGuard } from "./connection-guard.js";
import { bodyMayCarryKey } from "./credentials.js";

export interface PreAuthBodyOptions {
  /** Largest JSON or form body read from a sender not yet known (config.preAuthBody). */
  readonly maxBytes: number;
  /** Time such a body may take to arrive whole, however slowly it trickles in. */
  readonly timeoutMs: number;
  readonly connections: ConnectionGuard;
}

/** Bodies of the largest size that may be held at once before their senders are known: the memory all strangers share. */
const BUDGET_BODIES = 256;

/**
 * Bounds what a sender not yet known (Anonymous so far: no credentials in the headers or query
 * string, or a public route) makes the server read and hold: a JSON or form body, which is
 * parsed in memory and may carry the key itself, is read only up to `maxBytes`, within
 * `timeoutMs`, and within a budget shared by all such bodies in flight. Other bodies stream.
 *
 * A larger body is refused unread, its connection closed: 401 when the route needs more than
 * Anonymous may do (a key inside so large a body is never looked for), else 413. Callers who
 * send their key in a header keep each route's own limit. Also tells the connection guard which
 * connections belong to authenticated senders (never shed to make room). Returns its metric.
 */
export function registerPreAuthBodyLimits(app: FastifyInstance, options: PreAuthBodyOptions): Metric[] {
  const { maxBytes, timeoutMs, connections } = options;
  const budget = maxBytes * BUDGET_BODIES;
  let held = 0;
  const heldGauge = new Gauge({
    name: "wharf_http_pre_auth_body_bytes",
    help: `Bytes reserved by JSON and form bodies of senders not yet known (at most ${budget})`,
    registers: [],
    collect() {
      this.set(held);
    },
  });

  // Synchronous (callback) hook: no promise and no extra microtask on every request.
  app.addHook("preParsing", (request, reply, payload, done) => {
    if (request.principal.type !== "anonymous") {
      connections.identified(request.raw);
      return done(null, payload);
    }
    if (!bodyMayCarryKey(request)) return done(null, payload);
    const declared = Number(request.headers["content-length"] ?? Number.NaN);
    const length = Number.isSafeInteger(declared) ? declared : undefined;
    if (length === 0) return done(null, payload);
    if (length !== undefined && length > maxBytes) {
      void refusal(request, maxBytes).then((error) => done(error));
      return;
    }
    // A chunked body reserves the most it may become.
    const reserved = length ?? maxBytes;
    if (held + reserved > budget) return done(busy());
    held += reserved;
    const timer = setTimeout(() => connections.cut(request.raw.socket, "pre_auth_body_timeout"), timeoutMs);
    reply.raw.once("close", () => {
      held -= reserved;
      clearTimeout(timer);
    });
    payload.once("end", () => clearTimeout(timer));
    done(null, length === undefined ? capped(payload, maxBytes, () => refusal(request, maxBytes)) : payload);
  });
  return [heldGauge];
}

/** Passes `payload` on up to `maxBytes`, then stops reading it and fails with what `refuse` decides. */
function capped(payload: Readable, maxBytes: number, refuse: () => Promise<Error>): Readable {
  let seen = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen <= maxBytes) return callback(null, chunk);
      payload.unpipe(limited);
      payload.pause();
      void refuse().then(callback);
    },
  });
  payload.once("error", (error) => limited.destroy(error));
  return payload.pipe(limited);
}

/** 401 when Anonymous may not do what the route needs (the key it may carry is not read), else 413. */
async function refusal(request: FastifyRequest, maxBytes: number): Promise<DomainError> {
  const need = declaredNeed(request);
  if (need !== undefined && !(await request.can(need).catch(() => false))) {
    return new DomainError(
      "unauthenticated",
      "AUTHENTICATION_REQUIRED",
      "Authentication is required. A key inside a JSON or form body is read only from bodies of up to " +
        `${maxBytes} bytes (WHARF_PRE_AUTH_BODY_BYTES): ` +
        "send it in the X-ApiKey header or as Basic credentials.",
    );
  }
  return new DomainError(
    "too_large",
    "PRE_AUTH_BODY_TOO_LARGE",
    `Without credentials in its headers, a request may send at most ${maxBytes} bytes of JSON or form body ` +
      "(WHARF_PRE_AUTH_BODY_BYTES): " +
      "send the key in the X-ApiKey header or as Basic credentials to send more.",
  );
}

const busy = () =>
  new DomainError(
    "unavailable",
    "PRE_AUTH_BODIES_BUSY",
    "Too many requests without credentials in their headers are sending bodies right now: " +
      "try again shortly, or send the key in the X-ApiKey header.",
    1,
  );
