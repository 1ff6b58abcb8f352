import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { FastifyServerFactory } from "fastify";

interface ServerSettings {
  readonly keepAliveTimeout?: number;
  readonly requestTimeout?: number;
  readonly connectionTimeout?: number;
  readonly maxRequestsPerSocket?: number | null;
}

/** Answers a request before Fastify does and returns true, or returns false having touched nothing. */
export type FirstResponder = (request: IncomingMessage, response: ServerResponse) => boolean;

/**
 * Fastify's `serverFactory`: the HTTP server Fastify would make, whose requests are offered to
 * `first` (hot-responses.ts) before Fastify's own handler. A responder that throws has answered
 * nothing that counts: the request then goes to Fastify, or, when the response had already
 * started, its connection is closed, since no other answer can follow.
 */
export function serverWithFirstResponder(
  first: FirstResponder,
  onError: (error: unknown) => void,
): FastifyServerFactory {
  return (handler, options) => {
    const server = http.createServer((request, response) => {
      try {
        if (first(request, response)) return;
      } catch (error) {
        onError(error);
        if (response.headersSent) return void response.destroy();
      }
      handler(request, response);
    });
    // What Fastify does to the server it makes itself (fastify/lib/server.js), with its defaults
    // already applied to `options`, for ours too.
    const settings = options as ServerSettings;
    if (typeof settings.keepAliveTimeout === "number") server.keepAliveTimeout = settings.keepAliveTimeout;
    if (typeof settings.requestTimeout === "number") server.requestTimeout = settings.requestTimeout;
    if (typeof settings.connectionTimeout === "number") server.setTimeout(settings.connectionTimeout);
    if (settings.maxRequestsPerSocket) server.maxRequestsPerSocket = settings.maxRequestsPerSocket;
    return server;
  };
}
