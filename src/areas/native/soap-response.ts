import { XMLBuilder } from "fast-xml-parser";
import type { NativeMethod } from "./registry.js";
import { SOAP_NAMESPACE } from "./soap-namespace.js";
import type { SoapProtocol } from "./soap-protocol.js";
import { ROW_ELEMENT, resultShapeOf, type Shape } from "./soap-shapes.js";

/**
 * The envelopes `/api/soap` answers: a method's result as
 * `<MethodResponse><MethodResult>...</MethodResult></MethodResponse>` following the result's shape
 * (soap-shapes.ts, the WSDL's types), or a Fault. Envelopes and faults are written with
 * fast-xml-parser's builder. The rows inside a result are written by writeValue() below: the
 * builder spends about 1 µs per element (a path matcher, name checks, object walks), which made a
 * 20-row answer cost more than twice the JSON call; writeValue() writes the same XML from element
 * names that are XML names by construction (xmlName() in soap-shapes.ts, ROW_ELEMENT, Entry, Key,
 * Value) and text that always goes through xmlText().
 */

const XSI = "http://www.w3.org/2001/XMLSchema-instance";
const DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';
/**
 * Text is escaped by xmlText() rather than by the builder's entity pass (five regular expressions
 * over every value); `jPath: false` spares the builder a path string per element nothing reads.
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

/** Stands for the result while an answer's envelope is built; never in a result (xmlText() escapes `<`). */
const RESULT = "<!--result-->";
/** The envelope around each method's result, per protocol, split where the result goes; built once. */
const templates = new Map<string, readonly [string, string]>();

export function resultEnvelope(protocol: SoapProtocol, method: NativeMethod, result: unknown): string {
  const shape = resultShapeOf(method);
  if (shape === undefined || result === undefined) {
    return envelope(protocol, { [`${method.name}Response`]: { "@_xmlns": SOAP_NAMESPACE } });
  }
  const [head, tail] = templateOf(protocol, method);
  return head + writeValue(`${method.name}Result`, shape, result) + tail;
}

function templateOf(protocol: SoapProtocol, method: NativeMethod): readonly [string, string] {
  const key = `${protocol.version} ${method.name}`;
  let template = templates.get(key);
  if (template === undefined) {
    const text = envelope(protocol, { [`${method.name}Response`]: { "@_xmlns": SOAP_NAMESPACE, "#text": RESULT } });
    const at = text.indexOf(RESULT);
    template = [text.slice(0, at), text.slice(at + RESULT.length)];
    templates.set(key, template);
  }
  return template;
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

/**
 * `value` as the element `name` of `shape` (empty: `<name/>`, null: `xsi:nil`); a value the schema
 * did not foresee is written as text, never dropped.
 */
function writeValue(name: string, shape: Shape, value: unknown): string {
  if (value === null || value === undefined) return `<${name} xsi:nil="true"/>`;
  let content = "";
  switch (shape.kind) {
    case "object":
      if (!isRecord(value)) return element(name, anyText(value));
      for (const field of shape.fields) {
        const member = value[field.name];
        if (member !== undefined) content += writeValue(field.element, field.shape, member);
      }
      return element(name, content);
    case "array":
      if (!Array.isArray(value)) return element(name, anyText(value));
      for (const row of value as unknown[]) content += writeValue(ROW_ELEMENT, shape.row, row);
      return element(name, content);
    case "map":
      if (!isRecord(value)) return element(name, anyText(value));
      for (const [key, member] of Object.entries(value)) {
        content += `<Entry>${element("Key", xmlText(key))}${writeValue("Value", shape.value, member)}</Entry>`;
      }
      return element(name, content);
    case "scalar":
      return element(name, scalarText(shape.xsd, value));
    case "any":
      return element(name, anyText(value));
  }
}

function element(name: string, content: string): string {
  return content === "" ? `<${name}/>` : `<${name}>${content}</${name}>`;
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
