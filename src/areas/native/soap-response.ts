import { XMLBuilder } from "fast-xml-parser";
import type { NativeMethod } from "./registry.js";
import { SOAP_NAMESPACE } from "./soap-namespace.js";
import type { SoapProtocol } from "./soap-protocol.js";
import { ROW_ELEMENT, resultShapeOf, type Shape } from "./soap-shapes.js";

/**
 * The envelopes `/api/soap` answers, written with fast-xml-parser's builder (which escapes text and
 * attributes): a method's result as `<MethodResponse><MethodResult>...</MethodResult></MethodResponse>`
 * following the result's shape (soap-shapes.ts, the WSDL's types), or a Fault.
 */

const XSI = "http://www.w3.org/2001/XMLSchema-instance";
const DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';
/**
 * Text is escaped here (xmlText) rather than by the builder's entity pass, which runs five regular
 * expressions over every value and made a 20-row answer cost twice what the rest of the call does;
 * `jPath: false` spares the builder a path string per element that nothing here reads.
 */
const builderOptions = {
  ignoreAttributes: false,
  suppressBooleanAttributes: false,
  suppressEmptyNode: true,
  processEntities: false,
  // fast-xml-builder's option, missing from fast-xml-parser's XmlBuilderOptions type (hence the variable).
  jPath: false,
};
const builder = new XMLBuilder(builderOptions);

type Node = Record<string, unknown>;

const NIL: Node = { "@_xsi:nil": "true" };

export function resultEnvelope(protocol: SoapProtocol, method: NativeMethod, result: unknown): string {
  const shape = resultShapeOf(method);
  const response: Node = { "@_xmlns": SOAP_NAMESPACE };
  if (shape !== undefined && result !== undefined) {
    response[`${method.name}Result`] = result === null ? NIL : valueNode(shape, result);
  }
  return envelope(protocol, { [`${method.name}Response`]: response });
}

export interface FaultDescription {
  /** The fault code's local name: Client/Server (1.1), Sender/Receiver (1.2), VersionMismatch, MustUnderstand. */
  readonly code: string;
  readonly message: string;
  /** Wharf's stable error code (X-Wharf-Error), in the fault's detail. */
  readonly errorCode: string;
}

export function faultEnvelope(protocol: SoapProtocol, fault: FaultDescription): string {
  const detail = { ErrorCode: { "@_xmlns": SOAP_NAMESPACE, "#text": xmlText(fault.errorCode) } };
  const body =
    protocol.version === "1.1"
      ? {
          faultcode: `soap:${fault.code}`,
          faultstring: xmlText(fault.message),
          detail,
        }
      : {
          "soap:Code": { "soap:Value": `soap:${fault.code}` },
          "soap:Reason": { "soap:Text": { "@_xml:lang": "en", "#text": xmlText(fault.message) } },
          "soap:Detail": detail,
        };
  return envelope(protocol, { "soap:Fault": body });
}

function envelope(protocol: SoapProtocol, body: Node): string {
  const document = {
    "soap:Envelope": { "@_xmlns:soap": protocol.envelopeNamespace, "@_xmlns:xsi": XSI, "soap:Body": body },
  };
  return DECLARATION + builder.build(document);
}

/** `value` as the builder's node for `shape`; a value the schema did not foresee is written as text, never dropped. */
function valueNode(shape: Shape, value: unknown): unknown {
  switch (shape.kind) {
    case "object": {
      if (!isRecord(value)) return anyText(value);
      const node: Node = {};
      for (const field of shape.fields) {
        const member = value[field.name];
        if (member !== undefined) node[field.element] = member === null ? NIL : valueNode(field.shape, member);
      }
      return node;
    }
    case "array":
      if (!Array.isArray(value)) return anyText(value);
      return { [ROW_ELEMENT]: value.map((row: unknown) => (row === null ? NIL : valueNode(shape.row, row))) };
    case "map":
      if (!isRecord(value)) return anyText(value);
      return {
        Entry: Object.entries(value).map(([key, member]) => ({
          Key: xmlText(key),
          Value: member === null || member === undefined ? NIL : valueNode(shape.value, member),
        })),
      };
    case "scalar":
      return scalarText(shape.xsd, value);
    case "any":
      return anyText(value);
  }
}

function scalarText(xsd: string, value: unknown): string {
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") {
    if (Number.isFinite(value)) return String(value);
    if (xsd !== "double") return anyText(value);
    return Number.isNaN(value) ? "NaN" : value > 0 ? "INF" : "-INF";
  }
  return anyText(value);
}

function anyText(value: unknown): string {
  if (typeof value === "string") return xmlText(value);
  if (typeof value === "object" && value !== null) return xmlText(JSON.stringify(value));
  return xmlText(String(value));
}

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
// The control characters are the point: they are what XML 1.0 cannot carry.
// eslint-disable-next-line no-control-regex
const NEEDS_WORK = /[&<>\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;

/**
 * Text as element content: `&`, `<` and `>` escaped, and characters XML 1.0 cannot carry at all
 * (control characters, lone surrogates, U+FFFE/U+FFFF) replaced by U+FFFD. Every text the builder
 * writes comes through here; attribute values are constants.
 */
function xmlText(text: string): string {
  if (!NEEDS_WORK.test(text)) return text;
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "\uFFFD")
    .replace(/[&<>]/g, (char) => ESCAPES[char] ?? char);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
