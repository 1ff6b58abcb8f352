import { invalid } from "../../domain/errors.js";

/**
 * What an envelope may hold, checked in one pass over the text before any XML parser sees it, so
 * that no envelope makes the parser work for long: no document type declaration at all (so no
 * entity can be declared: billion laughs and external entities have nothing to stand on), no
 * processing instruction but the XML declaration, elements nested at most MAX_DEPTH deep and at
 * most MAX_ELEMENTS of them. A native call is a handful of elements; WS-Security headers a few
 * dozen.
 */
export const MAX_DEPTH = 32;
export const MAX_ELEMENTS = 1_000;

/** Throws a DomainError (invalid) naming the first thing the envelope may not hold. */
export function checkEnvelopeText(text: string): void {
  let depth = 0;
  let elements = 0;
  let at = text.indexOf("<");
  while (at !== -1) {
    const next = text.charCodeAt(at + 1);
    let end: number;
    if (next === 0x2f /* / */) {
      depth -= 1;
      end = text.indexOf(">", at);
    } else if (next === 0x21 /* ! */) {
      end = skipMarkup(text, at);
    } else if (next === 0x3f /* ? */) {
      end = skipDeclaration(text, at);
    } else {
      elements += 1;
      if (elements > MAX_ELEMENTS) {
        throw invalid("SOAP_TOO_MANY_ELEMENTS", `The envelope holds more than ${MAX_ELEMENTS} elements.`);
      }
      end = tagEnd(text, at);
      if (end === -1) return; // unterminated: the parser's well-formedness check names it
      if (text.charCodeAt(end - 1) !== 0x2f /* / */) {
        depth += 1;
        if (depth > MAX_DEPTH) {
          throw invalid("SOAP_TOO_DEEP", `The envelope nests elements more than ${MAX_DEPTH} levels deep.`);
        }
      }
    }
    if (end === -1) return;
    at = text.indexOf("<", end + 1);
  }
}

/** Comments and CDATA sections are skipped; anything else after `<!` is a DTD construct, refused. */
function skipMarkup(text: string, at: number): number {
  if (text.startsWith("<!--", at)) {
    const end = text.indexOf("-->", at + 4);
    return end === -1 ? -1 : end + 2;
  }
  if (text.startsWith("<![CDATA[", at)) {
    const end = text.indexOf("]]>", at + 9);
    return end === -1 ? -1 : end + 2;
  }
  throw invalid(
    "SOAP_DTD_REFUSED",
    "The envelope holds a document type declaration (<!DOCTYPE or <!ENTITY): SOAP forbids them, and Wharf reads none.",
  );
}

/** Only the XML declaration, at the very start; any other processing instruction is refused as SOAP says. */
function skipDeclaration(text: string, at: number): number {
  const isDeclaration = text.slice(0, at).replace(/^\uFEFF/, "") === "" && /^<\?xml[\s?]/.test(text.slice(at, at + 6));
  if (!isDeclaration) {
    throw invalid("SOAP_PI_REFUSED", "The envelope holds a processing instruction (<?...?>): SOAP forbids them.");
  }
  const end = text.indexOf("?>", at + 5);
  return end === -1 ? -1 : end + 1;
}

/** The `>` closing the start tag at `at`, past quoted attribute values (which may hold `>`). */
function tagEnd(text: string, at: number): number {
  let quote = 0;
  for (let i = at + 1; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (quote !== 0) {
      if (code === quote) quote = 0;
    } else if (code === 0x22 || code === 0x27) {
      quote = code;
    } else if (code === 0x3e /* > */) {
      return i;
    }
  }
  return -1;
}
