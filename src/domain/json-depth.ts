/**
 * How deeply arrays and objects may nest in JSON a client sends us to keep (manifest properties,
 * upload metadata). JSON.parse copes with any depth, but JSON.stringify and every other recursive
 * walk overflow the stack somewhere past a few thousand levels, which turned a hostile upload
 * into a 500. No real manifest comes close (a repackageHistory entry is two levels down).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `value` nests arrays or objects more than `maxDepth` levels deep; an array or object
 * is level 1 itself, a string or number level 0. Iterative on purpose: a recursive check would
 * overflow on exactly the input it is meant to refuse. Stops at the first level too deep, so the
 * cost is bounded by the size of the value, and a cycle (not possible from JSON.parse) ends too.
 */
export function exceedsJsonDepth(value: unknown, maxDepth: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== "object" || value === null) return false;
  // What is left to visit, and the level of each.
  const nodes: object[] = [value];
  const depths: number[] = [1];
  for (let node = nodes.pop(); node !== undefined; node = nodes.pop()) {
    const depth = depths.pop() ?? 0;
    if (depth > maxDepth) return true;
    for (const child of Array.isArray(node) ? (node as unknown[]) : Object.values(node)) {
      if (typeof child === "object" && child !== null) {
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/**
 * How many values (containers and the members or elements after the first) a JSON body may hold.
 * JSON.parse's cost follows the number of values, not the bytes: 60 MiB of `{"k0":{},...}` took
 * 17 s and 1.3 GB, and even 100,000 empty objects in 1 MiB block the event loop for 100-250 ms,
 * while 20,000 take about 15 ms. No body a client sends us comes close; the one large JSON body,
 * an upload's `content-b64`, is a single string.
 */
export const MAX_JSON_VALUES = 20_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Why JSON text would cost too much to parse, or undefined: `depth` or `values` over its bound. */
export type JsonCostProblem = "depth" | "values";

/**
 * Measures JSON text before JSON.parse does: the nesting depth and the number of values (each
 * `{`, `[` and `,` outside strings), stopping at the first bound crossed. Strings are skipped
 * with indexOf, so a large `content-b64` costs about a memchr. Invalid JSON is left to JSON.parse.
 */
export function jsonCostProblem(
  text: string,
  maxDepth: number = MAX_JSON_DEPTH,
  maxValues: number = MAX_JSON_VALUES,
): JsonCostProblem | undefined {
  let depth = 0;
  let values = 0;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === QUOTE) {
      at = closingQuote(text, at);
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > maxDepth) return "depth";
      if (++values > maxValues) return "values";
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
    } else if (code === COMMA && ++values > maxValues) {
      return "values";
    }
  }
  return undefined;
}

/** The index of the quote that closes the string opened at `open`, or the end of the text. */
function closingQuote(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at >= 0; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return text.length;
}
