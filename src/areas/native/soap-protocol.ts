import type { FastifyRequest } from "fastify";

/**
 * The two SOAP versions `/api/soap` speaks, told apart by the media type as the specifications do:
 * SOAP 1.1 is `text/xml` with a `SOAPAction` header, SOAP 1.2 is `application/soap+xml` with the
 * action as a media type parameter (docs/seed-api.md area H; research/next-areas.md 2.5).
 */
export type SoapVersion = "1.1" | "1.2";

export interface SoapProtocol {
  readonly version: SoapVersion;
  /** Namespace of Envelope, Header, Body and Fault. */
  readonly envelopeNamespace: string;
  /** Media type of every answer, request or fault. */
  readonly contentType: string;
  /** Fault codes by who is at fault (SOAP 1.1 `Client`/`Server`, SOAP 1.2 `Sender`/`Receiver`). */
  readonly senderCode: string;
  readonly receiverCode: string;
  /** HTTP status of a sender's fault: SOAP 1.1 answers every fault 500, SOAP 1.2 a sender's 400. */
  readonly senderStatus: number;
}

export const SOAP_11: SoapProtocol = {
  version: "1.1",
  envelopeNamespace: "http://schemas.xmlsoap.org/soap/envelope/",
  contentType: "text/xml; charset=utf-8",
  senderCode: "Client",
  receiverCode: "Server",
  senderStatus: 500,
};

export const SOAP_12: SoapProtocol = {
  version: "1.2",
  envelopeNamespace: "http://www.w3.org/2003/05/soap-envelope",
  contentType: "application/soap+xml; charset=utf-8",
  senderCode: "Sender",
  receiverCode: "Receiver",
  senderStatus: 400,
};

/** The media types the envelope parser takes (what SOAP 1.1 and 1.2 send). */
export const SOAP_MEDIA_TYPES = ["text/xml", "application/soap+xml"] as const;

/**
 * The protocol a request speaks by its media type; SOAP 1.1 for anything else, so that a
 * refusal of a request that is no SOAP at all is still a fault a SOAP 1.1 client can read.
 */
export function protocolOf(request: FastifyRequest): SoapProtocol {
  const type = request.headers["content-type"]?.trimStart().toLowerCase() ?? "";
  return type.startsWith("application/soap+xml") ? SOAP_12 : SOAP_11;
}

/**
 * The method name the request's action names: the `SOAPAction` header (1.1) or the media type's
 * `action` parameter (1.2), after its last `/` or `#` (ASMX writes `<namespace>/<Method>`).
 * Undefined when the request names none (both are optional on the wire).
 */
export function actionMethodOf(request: FastifyRequest): string | undefined {
  const header = request.headers.soapaction;
  const fromHeader = Array.isArray(header) ? header[0] : header;
  const action = fromHeader ?? mediaTypeAction(request.headers["content-type"]);
  const unquoted = action?.trim().replace(/^"(.*)"$/, "$1") ?? "";
  const name = unquoted.slice(Math.max(unquoted.lastIndexOf("/"), unquoted.lastIndexOf("#")) + 1);
  return name === "" ? undefined : name;
}

function mediaTypeAction(contentType: string | undefined): string | undefined {
  const match = /;\s*action\s*=\s*("[^"]*"|[^;\s]*)/i.exec(contentType ?? "");
  return match?.[1];
}
