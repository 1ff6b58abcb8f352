/**
 * XML text as a parser without entity processing leaves it (fast-xml-parser with processEntities
 * off, so that no DOCTYPE entity is ever expanded): the five predefined entities and character
 * references are resolved here, by both readers of XML from clients (the SOAP envelope and a feed's
 * package store element).
 */

const PREDEFINED_ENTITIES: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/**
 * The text of a reference's body (`amp`, `#65`, `#x41`), or undefined for anything else: an
 * undeclared entity, or a character XML does not allow.
 */
export function decodeXmlReference(body: string): string | undefined {
  if (Object.hasOwn(PREDEFINED_ENTITIES, body)) return PREDEFINED_ENTITIES[body];
  const numeric = /^#(?:x([0-9a-fA-F]+)|([0-9]+))$/.exec(body);
  if (numeric === null) return undefined;
  const code = numeric[1] !== undefined ? Number.parseInt(numeric[1], 16) : Number(numeric[2]);
  return isXmlChar(code) ? String.fromCodePoint(code) : undefined;
}

/** XML 1.0 production [2] Char. */
function isXmlChar(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}
