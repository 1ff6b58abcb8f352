import type { NativeMethod, NativeParameter } from "./registry.js";
import { SOAP_NAMESPACE, soapActionOf } from "./soap-namespace.js";

/**
 * The example calls of the reference page, as plain text (the page escapes them): the JSON
 * transport's request line and a curl command, and a SOAP 1.1 request. Values are made up from
 * the parameter's type, or taken from an `e.g. <value>` in its description, so a new method gets
 * sensible examples without anyone writing them.
 */

/** Where examples say the key goes; the page explains the placeholders once. */
export const KEY_PLACEHOLDER = "YOUR_API_KEY";

/** By NativeType; types other areas add later fall back to a neutral placeholder. */
const VALUE_BY_TYPE: Readonly<Record<string, string>> = {
  integer: "1",
  indicator: "Y",
  string: "text",
  bytes: "AAECAw==",
  datetime: "2026-01-01T00:00:00Z",
};

export function exampleValue(parameter: NativeParameter): string {
  const quoted = /\be\.g\.,?\s+`?([^\s`,;)]+?)`?[.,;)]?(?:\s|$)/.exec(parameter.description)?.[1];
  return quoted ?? VALUE_BY_TYPE[parameter.type] ?? "value";
}

function requiredOf(method: NativeMethod): readonly NativeParameter[] {
  return method.parameters.filter((p) => p.required);
}

/** `GET /api/json/<Method>?key=...&<required>=...`: a call that works as written (with a real key). */
export function jsonRequestLine(method: NativeMethod): string {
  const query = [
    `key=${KEY_PLACEHOLDER}`,
    ...requiredOf(method).map((p) => `${encodeURIComponent(p.name)}=${encodeURIComponent(exampleValue(p))}`),
  ];
  return `GET /api/json/${encodeURIComponent(method.name)}?${query.join("&")}`;
}

/** The same call with curl, the key in a header (kept out of proxy and shell-history URLs). */
export function curlCommand(method: NativeMethod): string {
  const lines = [
    `curl -G "$WHARF_URL/api/json/${encodeURIComponent(method.name)}"`,
    `  -H "X-ApiKey: $WHARF_API_KEY"`,
    ...requiredOf(method).map((p) => `  --data-urlencode ${shellQuote(`${p.name}=${exampleValue(p)}`)}`),
  ];
  return lines.join(" \\\n");
}

/**
 * A SOAP 1.1 request: key first, then every parameter in declaration order. Optional ones are
 * shown commented out: where they go, without a made-up value the method might refuse (a status
 * name, say), so the envelope works as written, like the JSON example with its required ones.
 */
export function soapRequest(method: NativeMethod): string {
  const parameters = method.parameters.map((p) => {
    const element = `<${p.name}>${escapeXml(exampleValue(p))}</${p.name}>`;
    // "--" may not appear inside an XML comment.
    return p.required ? `      ${element}` : `      <!-- optional: ${element.replace(/--/g, "- -")} -->`;
  });
  return [
    "POST /api/soap HTTP/1.1",
    "Content-Type: text/xml; charset=utf-8",
    `SOAPAction: "${soapActionOf(method.name)}"`,
    "",
    '<?xml version="1.0" encoding="utf-8"?>',
    '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">',
    "  <soap:Body>",
    `    <${method.name} xmlns="${escapeXml(SOAP_NAMESPACE)}">`,
    `      <API_Key>${KEY_PLACEHOLDER}</API_Key>`,
    ...parameters,
    `    </${method.name}>`,
    "  </soap:Body>",
    "</soap:Envelope>",
  ].join("\n");
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** Single-quoted for POSIX shells: only `'` itself needs care. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
