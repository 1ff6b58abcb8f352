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
