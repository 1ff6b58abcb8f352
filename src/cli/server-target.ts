import type { Config } from "../config.js";
import { healthUrl } from "./healthcheck.js";

/** The running server a command asks, and the key it asks with. */
export interface ServerTarget {
  /** Without a trailing slash: `http://127.0.0.1:8624`. */
  readonly base: string;
  readonly apiKey: string;
}

/**
 * Where the running server is (`--server`, else where WHARF_HOST and WHARF_PORT say) and the key to
 * ask it with (`--api-key`, else WHARF_API_KEY); undefined, after `missingKey` is printed, without one.
 */
export function serverTarget(
  given: { readonly server?: string; readonly apiKey?: string },
  config: Config,
  err: (line: string) => void,
  missingKey: string,
): ServerTarget | undefined {
  const apiKey = given.apiKey ?? process.env.WHARF_API_KEY;
  if (apiKey === undefined || apiKey === "") {
    err(missingKey);
    return undefined;
  }
  const base = given.server ?? healthUrl(config.host, config.port).replace(/\/health$/, "");
  return { base: base.replace(/\/+$/, ""), apiKey };
}
