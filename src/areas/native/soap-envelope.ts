import { XMLParser, XMLValidator } from "fast-xml-parser";
import { DomainError, invalid } from "../../domain/errors.js";
import { decodeXmlReference } from "../../domain/xml-references.js";
import type { RawPair } from "../releases/params.js";
import type { RawArguments } from "./arguments.js";
import { SOAP_11, SOAP_12, type SoapProtocol } from "./soap-protocol.js";
import { checkEnvelopeText, MAX_DEPTH } from "./soap-xml-guard.js";

/**
 * A SOAP request envelope read into the call it makes: the method (the local name of the Body's
 * element) and its arguments as raw text by lower-cased name, ready for bindArguments() like the
 * JSON transport's. The text is checked first (soap-xml-guard.ts: no DTD, no processing
 * instruction, bounded depth and element count), then for well-formedness, then parsed by
 * fast-xml-parser with entity processing off: the five predefined entities and character
 * references are decoded here, any other entity reference is refused.
 */
export class SoapCall {
  /**
   * The `API_Key` element's value until the auth hook takes it out (http/credentials.ts
   * takeCredentialsFromBody reads a body's root `API_Key`, as for JSON), so it is never kept as data.
   */
  API_Key?: string;

  constructor(
    readonly operation: string,
    readonly args: RawArguments,
  ) {}
}

const parser = new XMLParser({
  ignoreAttributes: false,
  parseTagValue: false,
  parseAttributeValue: false,
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  trimValues: true,
  cdataPropName: "#cdata",
  maxNestedTags: MAX_DEPTH + 1,
  // No callback here reads the path: spares the parser a path string per element.
  jPath: false,
  isArray: (_name, _path, _isLeaf, isAttribute) => !isAttribute,
});

const KEY_NAME = "api_key";
/** SOAP 1.1 `actor` / SOAP 1.2 `role` values that address this service (absent: the ultimate receiver). */
const ADDRESSED_TO_US = new Set([
  "http://schemas.xmlsoap.org/soap/actor/next",
  "http://www.w3.org/2003/05/soap-envelope/role/next",
  "http://www.w3.org/2003/05/soap-envelope/role/ultimateReceiver",
]);

type XmlNode = Record<string, unknown>;

/** Reads `text` sent as `protocol`; throws DomainError (invalid, or a SOAP fault code) naming what is wrong. */
export function readEnvelope(text: string, protocol: SoapProtocol): SoapCall {
  if (text.trim() === "") throw invalid("SOAP_NO_ENVELOPE", "The request has no body: send a SOAP envelope.");
  checkEnvelopeText(text);
  const valid = XMLValidator.validate(text);
  if (valid !== true) {
    const { msg, line, col } = valid.err;
    const where = typeof line === "number" && typeof col === "number" ? ` (line ${line}, column ${col})` : "";
    throw invalid("SOAP_MALFORMED", `The envelope is not well-formed XML: ${msg.replace(/\.$/, "")}${where}.`);
  }
  let document: XmlNode;
  try {
    document = parser.parse(text) as XmlNode;
  } catch (error) {
    throw invalid("SOAP_MALFORMED", `The envelope cannot be read: ${(error as Error).message}`);
  }
  const envelope = onlyElement(
    document,
    "Envelope",
    "The body is not a SOAP envelope: its root element must be Envelope.",
  );
  checkNamespace(envelope.name, envelope.node, protocol);
  const header = childElements(envelope.node).find((child) => localName(child.name) === "Header");
  if (header) checkHeaders(header.node);
  const body = childElements(envelope.node).find((child) => localName(child.name) === "Body");
  if (!body) throw invalid("SOAP_NO_BODY", "The envelope has no Body.");
  const calls = childElements(body.node);
  const [call] = calls;
  if (call === undefined) throw invalid("SOAP_NO_OPERATION", "The envelope's Body holds no method element.");
  if (calls.length > 1) {
    throw invalid(
      "SOAP_MANY_OPERATIONS",
      "The envelope's Body holds more than one element: call one method per envelope.",
    );
  }
  return callOf(localName(call.name), call.node);
}

function callOf(operation: string, node: XmlNode): SoapCall {
  const pairs = new Map<string, RawPair>();
  let key: string | undefined;
  for (const { name: qualified, node: value, count } of childElements(node)) {
    const name = localName(qualified);
    const lower = name.toLowerCase();
    if (count > 1 || (lower === KEY_NAME ? key !== undefined : pairs.has(lower))) throw repeated(name);
    const text = argumentText(name, value);
    if (lower === KEY_NAME) key = text ?? "";
    else if (text !== undefined) pairs.set(lower, { name, value: text });
  }
  const soapCall = new SoapCall(operation, pairs);
  if (key !== undefined && key !== "") soapCall.API_Key = key;
  return soapCall;
}

/** An argument's text, trimmed; undefined when empty or `xsi:nil` (absent, as in the JSON transport). */
function argumentText(name: string, node: XmlNode): string | undefined {
  const content = node[CONTENT];
  if (Object.keys(node).some((k) => !k.startsWith("@_") && !k.startsWith("#"))) {
    throw invalid("INVALID_PARAMETER", `The parameter '${name}' must be a single value.`);
  }
  if (attribute(node, "nil") === "true" || attribute(node, "nil") === "1") return undefined;
  const text = typeof content === "string" ? content : "";
  return text.trim() === "" ? undefined : text.trim();
}

/** Key under which childElements() keeps an element's own text (decoded, CDATA appended). */
const CONTENT = "#content";

interface Child {
  readonly name: string;
  readonly node: XmlNode;
  /** How many elements of this name the parent holds (only the first is `node`). */
  readonly count: number;
}

/** The element children of a parsed node, in document order of their names, each as an object. */
function childElements(node: XmlNode): Child[] {
  const children: Child[] = [];
  for (const [name, value] of Object.entries(node)) {
    if (name.startsWith("@_") || name.startsWith("#")) continue;
    const items = Array.isArray(value) ? (value as unknown[]) : [value];
    children.push({ name, node: asNode(items[0]), count: items.length });
  }
  return children;
}

/** A parsed element as an object: its text (under CONTENT, entities decoded), attributes and children. */
function asNode(value: unknown): XmlNode {
  if (typeof value === "string") return { [CONTENT]: decodeText(value) };
  const node = (value ?? {}) as XmlNode;
  const text = typeof node["#text"] === "string" ? decodeText(node["#text"]) : "";
  const cdata = Array.isArray(node["#cdata"]) ? (node["#cdata"] as unknown[]).join("") : "";
  return { ...node, [CONTENT]: text + cdata };
}

function onlyElement(document: XmlNode, expected: string, message: string): { name: string; node: XmlNode } {
  const roots = childElements(document);
  const [root] = roots;
  if (roots.length !== 1 || root === undefined || root.count !== 1 || localName(root.name) !== expected) {
    throw invalid("SOAP_NO_ENVELOPE", message);
  }
  return root;
}

/** The Envelope's namespace must be the one of the protocol the media type names (SOAP's VersionMismatch). */
function checkNamespace(qualified: string, node: XmlNode, protocol: SoapProtocol): void {
  const colon = qualified.indexOf(":");
  const declared = attributeExact(node, colon === -1 ? "xmlns" : `xmlns:${qualified.slice(0, colon)}`);
  if (declared === protocol.envelopeNamespace) return;
  const other = protocol === SOAP_11 ? SOAP_12 : SOAP_11;
  const hint =
    declared === other.envelopeNamespace
      ? ` It is a SOAP ${other.version} envelope: send it as ${other.contentType.split(";")[0]}.`
      : ` Its namespace must be ${protocol.envelopeNamespace}.`;
  throw new DomainError(
    "invalid",
    "SOAP_VERSION_MISMATCH",
    `The request is sent as SOAP ${protocol.version} but its Envelope is not one.${hint}`,
  );
}

/** A header this service must understand and does not (they are all unknown to it): SOAP's MustUnderstand fault. */
function checkHeaders(header: XmlNode): void {
  for (const { name, node } of childElements(header)) {
    const must = attribute(node, "mustUnderstand");
    const target = attribute(node, "actor") ?? attribute(node, "role");
    if ((must === "1" || must === "true") && (target === undefined || ADDRESSED_TO_US.has(target))) {
      throw new DomainError(
        "invalid",
        "SOAP_MUST_UNDERSTAND",
        `The header '${localName(name)}' must be understood, and this service does not know it.`,
      );
    }
  }
}

/** An attribute's value by local name (any prefix), trimmed. */
function attribute(node: XmlNode, local: string): string | undefined {
  for (const [name, value] of Object.entries(node)) {
    if (name.startsWith("@_") && localName(name.slice(2)) === local && typeof value === "string") return value.trim();
  }
  return undefined;
}

function attributeExact(node: XmlNode, qualified: string): string | undefined {
  const value = node[`@_${qualified}`];
  return typeof value === "string" ? value : undefined;
}

function localName(qualified: string): string {
  return qualified.slice(qualified.indexOf(":") + 1);
}

/** Decodes the predefined entities and character references; refuses any other (undeclared) entity. */
function decodeText(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(#x[0-9A-Fa-f]+|#[0-9]+|[^;&\s]*);/g, (_whole, reference: string) => {
    const value = decodeXmlReference(reference);
    if (value !== undefined) return value;
    if (reference.startsWith("#")) {
      throw invalid("SOAP_MALFORMED", `The envelope refers to the character &${reference}; which XML does not allow.`);
    }
    throw invalid(
      "SOAP_UNKNOWN_ENTITY",
      `The envelope refers to the entity &${reference}; which is not declared: only &lt; &gt; &amp; &quot; &apos; and character references are read.`,
    );
  });
}

function repeated(name: string) {
  return invalid("DUPLICATE_PARAMETER", `The parameter '${name}' is given more than once.`);
}
