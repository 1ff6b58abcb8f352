import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { FastifyServerFactory } from "fastify";
import { addressKey } from "../net/address-key.js";
import type { Config } from "../config.js";
import { addressListMatcher } from "../net/address-list.js";
import { type ConnectionGuard, createConnectionGuard } from "./connection-guard.js";
import { defaultMaxConnections, openFileLimit } from "./fd-limit.js";

/** Answers a request before Fastify does and returns true, or returns false having touched nothing. */
export type FirstResponder = (request: IncomingMessage, response: ServerResponse) => boolean;

/** A timeout for each phase of a connection (config.connections), and the guard of its bounds. */
export interface ServerGuards {
  readonly headersTimeoutMs: number;
  /** No byte either way for this long while the client should be sending or reading: see connection-guard.ts. */
  readonly stallTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly connections: ConnectionGuard;
}

/**
 * The guards the configuration asks for. One client is an address or an IPv6 /64, as for failed
 * sign-ins; trusted proxies are not capped per client (they carry many).
 */
export function serverGuardsFor(config: Pick<Config, "connections" | "trustProxy">): ServerGuards {
  const { connections, trustProxy } = config;
  return {
    headersTimeoutMs: connections.headersTimeoutMs,
    stallTimeoutMs: connections.stallTimeoutMs,
    keepAliveTimeoutMs: connections.keepAliveTimeoutMs,
    connections: createConnectionGuard({
      max: connections.max ?? defaultMaxConnections(openFileLimit()),
      maxPerAddress: connections.maxPerAddress,
      clientOf: addressKey,
      ...(trustProxy === undefined ? {} : { unlimitedAddress: addressListMatcher(trustProxy) }),
    }),
  };
}

/** Node checks header deadlines on an interval (30 s by default, which let headers take 90 s): check often enough to keep them. */
const checkingInterval = (headersTimeoutMs: number) => Math.min(1000, Math.max(50, Math.floor(headersTimeoutMs / 10)));

/**
 * Fastify's `serverFactory`: the HTTP server Fastify would make, whose requests are offered to
 * `first` (hot-responses.ts) before Fastify's own handler. A responder that throws has answered
 * nothing that counts: the request then goes to Fastify, or, when the response had already
 * started, its connection is closed, since no other answer can follow.
 *
 * Its timeouts are `guards`', not Fastify's options. No whole-request timeout (requestTimeout 0):
 * a 10 GiB upload over a slow link must finish as long as it progresses; a body that stops
 * arriving is cut by the stall timeout instead.
 */
export function serverWithFirstResponder(
  first: FirstResponder,
  onError: (error: unknown) => void,
  guards: ServerGuards,
): FastifyServerFactory {
  return (handler) => {
    const server = http.createServer(
      {
        headersTimeout: guards.headersTimeoutMs,
        requestTimeout: 0,
        connectionsCheckingInterval: checkingInterval(guards.headersTimeoutMs),
      },
      (request, response) => {
        try {
          if (first(request, response)) return;
        } catch (error) {
          onError(error);
          if (response.headersSent) return void response.destroy();
        }
        handler(request, response);
      },
    );
    server.keepAliveTimeout = guards.keepAliveTimeoutMs;
    server.timeout = guards.stallTimeoutMs;
    guards.connections.attach(server);
    return server;
  };
}
