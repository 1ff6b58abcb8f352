import http from "node:http";
import { isIP } from "node:net";

/**
 * `wharf healthcheck`: asks the server that `wharf serve` would start with the same WHARF_HOST and
 * WHARF_PORT for `/health`; exit 0 when it answers 200, 1 otherwise. The Docker image's HEALTHCHECK
 * runs it, so that the check follows the address the operator configured instead of a fixed one.
 */

const USAGE = `Usage: wharf healthcheck

Asks the server listening where WHARF_HOST and WHARF_PORT say for /health (0.0.0.0 and :: are
asked on their loopback address). Exit 0 when it answers 200, 1 when not.`;

/** Docker's HEALTHCHECK gives the command 5 s (Dockerfile): answer within that, with a reason. */
const TIMEOUT_MS = 4000;

/** What to connect to in order to reach a server listening on `host`. */
export function healthTarget(host: string): string {
  // The unspecified address listens on every address of its family: ask its loopback.
  if (host === "0.0.0.0") return "127.0.0.1";
  if (isIP(host) === 6 && /^[0:]+$/.test(host)) return "::1";
  return host;
}

/** The URL of `/health` on a server listening on `host:port`, IPv6 addresses bracketed. */
export function healthUrl(host: string, port: number): string {
  const target = healthTarget(host);
  // A zone (fe80::1%eth0) is written %25 in a URL (RFC 6874).
  const authority = isIP(target) === 6 ? `[${target.replace("%", "%25")}]` : target;
  return `http://${authority}:${port}/health`;
}

interface HealthcheckIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

/** Runs the check against `host:port` (from the configuration) and returns the exit code. */
export async function healthcheckCommand(
  args: readonly string[],
  listen: { readonly host: string; readonly port: number },
  io: HealthcheckIo,
): Promise<number> {
  if (args.length === 1 && (args[0] === "--help" || args[0] === "-h")) {
    io.out(USAGE);
    return 0;
  }
  if (args.length > 0) {
    io.err(`wharf healthcheck takes no arguments\n\n${USAGE}`);
    return 2;
  }
  if (listen.port === 0) {
    io.err("wharf healthcheck: WHARF_PORT is 0 (a port chosen at start-up), so there is no known port to check");
    return 2;
  }
  const url = healthUrl(listen.host, listen.port);
  const outcome = await getStatus(url);
  if (outcome === 200) {
    io.out(`healthy: ${url} answered 200`);
    return 0;
  }
  io.err(`unhealthy: ${url} ${typeof outcome === "number" ? `answered ${outcome}` : outcome}`);
  return 1;
}

/** The status `url` answers, or why there was none. node:http rather than fetch: no proxy applies to a loopback check. */
function getStatus(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = http.get(url, { timeout: TIMEOUT_MS }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on("timeout", () => {
      resolve(`gave no answer within ${TIMEOUT_MS} ms`);
      request.destroy();
    });
    request.on("error", (error) => resolve(`could not be reached (${error.message})`));
  });
}
