import type { IncomingHttpHeaders } from "node:http";
import type { FastifyRequest } from "fastify";
import { DomainError } from "../../domain/errors.js";
import { parseDeploymentDetails } from "./fields.js";
import type { DownloadedVersion, PackageDeploymentService } from "./service.js";

/**
 * A deployment announced with a download (docs/compat.md 2.4): `X-ProGet-Deployment-Application`,
 * `-Description` and `-Target` (required), `-Url`, `-UserName`, `-Date`. The download must never
 * fail because of them: an incomplete or invalid set is logged at warn level and not recorded,
 * and a failure to store is logged, not thrown.
 */

/** Header name (as Node lowercases it) -> the record field it carries. */
const HEADER_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ["x-proget-deployment-application", "application"],
  ["x-proget-deployment-description", "description"],
  ["x-proget-deployment-target", "target"],
  ["x-proget-deployment-url", "url"],
  ["x-proget-deployment-username", "username"],
  ["x-proget-deployment-date", "date"],
];

/** Whether the request carries any X-ProGet-Deployment-* header this module reads. */
export function announcesDeployment(headers: IncomingHttpHeaders): boolean {
  return HEADER_FIELDS.some(([header]) => headers[header] !== undefined);
}

/**
 * Records the deployment the request's headers announce, for the version the download served.
 * Returns undefined, synchronously, when there are no such headers or no recorder: the common
 * download pays six header lookups and no promise. The returned promise never rejects.
 */
export function recordAnnouncedDeployment(
  request: FastifyRequest,
  version: DownloadedVersion,
  record: PackageDeploymentService["recordDownload"] | undefined,
): Promise<void> | undefined {
  if (record === undefined) return undefined;
  let fields: Map<string, string> | undefined;
  for (const [header, field] of HEADER_FIELDS) {
    const value = request.headers[header];
    const text = typeof value === "string" ? value.trim() : undefined;
    if (text) (fields ??= new Map()).set(field, fromHeaderText(text));
  }
  if (fields === undefined) return undefined;
  let details;
  try {
    details = parseDeploymentDetails(fields);
  } catch (error) {
    const code = error instanceof DomainError ? error.code : undefined;
    request.log.warn({ code, err: error }, "X-ProGet-Deployment-* headers incomplete or invalid: not recorded");
    return undefined;
  }
  return record(version, details, request.principal).then(
    () => undefined,
    (error: unknown) => request.log.error({ err: error }, "deployment announced by a download not recorded"),
  );
}

/**
 * Node reads header bytes as Latin-1; clients that send non-ASCII text (a description with an
 * accent) send UTF-8. Decoded as UTF-8 when that is what the bytes are, kept as they are otherwise.
 */
function fromHeaderText(text: string): string {
  // Plain ASCII (the usual case) needs no decoding; beyond Latin-1 it did not come from bytes.
  if (!/[\u0080-\u00ff]/.test(text) || /[\u0100-\uffff]/.test(text)) return text;
  const decoded = Buffer.from(text, "latin1").toString("utf8");
  return decoded.includes("\ufffd") ? text : decoded;
}
