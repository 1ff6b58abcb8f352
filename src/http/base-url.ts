import type { FastifyRequest } from "fastify";

const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The server's public base URL as this request sees it, for absolute URLs in responses (`endpointUrl`, asset `content`) when WHARF_BASE_URL is
 * not set: X-Forwarded-Proto/-Host (a reverse proxy's) or Host. The value is only reflected to
 * the same caller, and a malformed host is ignored rather than echoed.
 */
export function requestBaseUrl(request: FastifyRequest): string | undefined {
  const forwardedProto = firstValue(request.headers["x-forwarded-proto"])?.toLowerCase();
  const host = [firstValue(request.headers["x-forwarded-host"]), firstValue(request.headers.host)].find(
    (candidate) => candidate !== undefined && HOST.test(candidate),
  );
  if (host === undefined) return undefined;
  const scheme = forwardedProto === "https" || forwardedProto === "http" ? forwardedProto : request.protocol;
  return `${scheme}://${host}`;
}

function firstValue(header: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(header) ? header[0] : header;
  const value = raw?.split(",")[0]?.trim();
  return value === "" ? undefined : value;
}

/** The base URL absolute links are built on: WHARF_BASE_URL when set, else what the request shows, without a trailing '/'. */
export function publicBaseUrl(configured: string | undefined, request: FastifyRequest, port: number): string {
  return (configured ?? requestBaseUrl(request) ?? `http://localhost:${port}`).replace(/\/+$/, "");
}
