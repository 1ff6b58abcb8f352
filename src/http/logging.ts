import type { FastifyServerOptions } from "fastify";
import type { Config } from "../config.js";

const SECRET_QUERY = /([?&](?:key|api_key|password)=)[^&#]*/gi;

/** Credentials in query strings are accepted for compatibility and redacted in every log line (docs/PRODUCT.md). */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, "$1[REDACTED]");
}

export function loggerOptions(level: Config["logLevel"]): FastifyServerOptions["logger"] {
  return {
    level,
    redact: {
      paths: [
        "req.headers.authorization",
        'req.headers["x-apikey"]',
        'req.headers["x-proget-apikey"]',
        "headers.authorization",
        'headers["x-apikey"]',
        'headers["x-proget-apikey"]',
      ],
      censor: "[REDACTED]",
    },
    serializers: {
      req(request) {
        return { method: request.method, url: redactUrl(request.url), host: request.host, remoteAddress: request.ip };
      },
    },
  };
}
