import type { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import { DomainError, type ErrorKind } from "../../domain/errors.js";
import { STATUS_BY_KIND } from "../../http/errors.js";
import { databaseBusy, isBusy } from "../../storage/busy.js";
import { diskFull, isDiskFull } from "../../storage/disk-full.js";
import { protocolOf, type SoapProtocol } from "./soap-protocol.js";
import { type FaultDescription, faultEnvelope } from "./soap-response.js";

/**
 * Every refusal on `/api/soap` is a SOAP Fault a SOAP client reads as one (the root handler's plain
 * text would be a transport error to it), in the version the request speaks:
 * - the caller's fault (unknown method, missing or bad argument, refused key, malformed or hostile
 *   envelope): `soap:Client` with HTTP 500 in SOAP 1.1 (every 1.1 fault is 500), `Sender` with 400
 *   in SOAP 1.2 (its HTTP binding);
 * - the server's: `Server`/`Receiver`, 500; VersionMismatch and MustUnderstand as SOAP names them, 500;
 * - refusals about the HTTP exchange rather than the call keep their status, so that clients and
 *   proxies act on it: 413 (body too large), 415, 429 and 503 (with Retry-After).
 * The fault string is the sentence the JSON transport answers; the detail holds Wharf's code.
 */
export function registerSoapFaults(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | DomainError | Error, request, reply) => {
    const refusal = refusalOf(error, request);
    if (refusal.kind === undefined) request.log.error({ err: error }, "unhandled error");
    else request.log.info({ code: refusal.code, kind: refusal.kind }, refusal.message);
    const protocol = protocolOf(request);
    const { status, fault } = faultOf(protocol, refusal);
    if (refusal.retryAfterSeconds !== undefined) reply.header("Retry-After", String(refusal.retryAfterSeconds));
    return reply
      .code(status)
      .header("Content-Type", protocol.contentType)
      .header("X-Wharf-Error", refusal.code)
      .send(faultEnvelope(protocol, fault));
  });
}

/** What went wrong: a DomainError's kind, code and message, or (kind undefined) an unexpected error. */
interface Refusal {
  readonly kind: ErrorKind | undefined;
  readonly code: string;
  readonly message: string;
  readonly retryAfterSeconds?: number;
}

/** Kinds whose status is kept: they are about the HTTP exchange, not the SOAP call. */
const TRANSPORT_KINDS = new Set<ErrorKind>(["too_large", "unsupported", "too_many_requests", "unavailable"]);
/** Wharf codes that are SOAP's own fault codes. */
const SOAP_CODES: Readonly<Record<string, string>> = {
  SOAP_VERSION_MISMATCH: "VersionMismatch",
  SOAP_MUST_UNDERSTAND: "MustUnderstand",
};

function faultOf(protocol: SoapProtocol, refusal: Refusal): { status: number; fault: FaultDescription } {
  const { kind, code: errorCode, message } = refusal;
  const soapCode = SOAP_CODES[errorCode];
  const status = kind === undefined ? 500 : STATUS_BY_KIND[kind];
  const sender = status < 500;
  const code = soapCode ?? (sender ? protocol.senderCode : protocol.receiverCode);
  const fault = { code, message, errorCode };
  if (kind !== undefined && TRANSPORT_KINDS.has(kind)) return { status, fault };
  return { status: soapCode === undefined && sender ? protocol.senderStatus : 500, fault };
}

/** What the root error handler (http/errors.ts) makes of an error, for a fault. */
function refusalOf(error: FastifyError | DomainError | Error, request: FastifyRequest): Refusal {
  if (isBusy(error)) error = databaseBusy(error);
  if (isDiskFull(error)) error = diskFull(undefined, error);
  if (error instanceof DomainError) return error;
  const code = "code" in error && typeof error.code === "string" ? error.code : "BAD_REQUEST";
  const status = "statusCode" in error ? error.statusCode : undefined;
  if (code === "FST_ERR_CTP_BODY_TOO_LARGE") {
    const message = `The envelope is larger than the ${request.routeOptions.bodyLimit} bytes this service reads.`;
    return { kind: "too_large", code: "BODY_TOO_LARGE", message };
  }
  if (status === 415) return { kind: "unsupported", code, message: error.message };
  if (status !== undefined && status >= 400 && status < 500) return { kind: "invalid", code, message: error.message };
  return { kind: undefined, code: "INTERNAL_ERROR", message: `An internal error occurred (request ${request.id}).` };
}
