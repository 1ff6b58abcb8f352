import { DomainError, type ErrorKind } from "../../../domain/errors.js";
import { formatVersion } from "../../../domain/upack-version.js";
import type { VirtualSource } from "../../../domain/vpack.js";

/*
 * Statuses of a failed assembly. The download request itself is well-formed (so not 400) and the
 * virtual package exists (so not 404: Inedo.UPack reports a 404 as "package not found", naming the
 * wrong package). What fails is a reference in the stored manifest that this feed cannot satisfy
 * now: a package version that was deleted or never pushed, a different SHA-1, a URL the fetch
 * policy refuses. That is 409: the feed's state conflicts with the manifest, and pushing the
 * package, fixing the manifest or changing the policy resolves it. A URL source that was fetched
 * and failed or lied is the upstream's fault: 502, or 504 when it was too slow.
 */

/** Upstream failures keep their status (502, 504, 413); 503 would blame Wharf instead of the upstream. */
const UPSTREAM_KINDS: Partial<Record<ErrorKind, ErrorKind>> = {
  bad_gateway: "bad_gateway",
  gateway_timeout: "gateway_timeout",
  unavailable: "bad_gateway",
  too_large: "too_large",
};

/** The error with the failing item named (`contents[2] (group/name:1.0.0)`) and its status chosen as above. */
export function describeFailure(error: unknown, at: string, source: VirtualSource): unknown {
  // Anything else is a fault of this server (disk, bug): a 500 with the original in the log.
  if (!(error instanceof DomainError)) return error;
  const kind = UPSTREAM_KINDS[error.kind] ?? "conflict";
  const message = `The virtual package cannot be assembled: ${at} (${describeSource(source)}): ${error.message}`;
  return new DomainError(kind, error.code, message, { cause: error });
}

export function describeSource(source: VirtualSource): string {
  switch (source.kind) {
    case "package": {
      const group = source.group === "" ? "" : `${source.group}/`;
      return `${group}${source.name}:${formatVersion(source.version)}`;
    }
    case "url": {
      // No query string: it may carry a token, and this text reaches clients and logs.
      const url = new URL(source.url);
      return `${url.origin}${url.pathname}`;
    }
    case "asset":
      return `asset ${source.feed}/${source.asset}`;
  }
}
