import { invalid } from "../../domain/errors.js";
import type { DesiredItem } from "../../drift/model.js";
import { MAX_ITEMS, parseItems, presentItem } from "../../drift/items/schema.js";

/**
 * The items of a role or server as the API takes and shows them (the wire format of
 * src/drift/items/schema.ts). The count is checked before anything else is, so that a huge list
 * costs nothing more than its parsing.
 */
export function parseConfigItems(input: unknown, role: string | null): DesiredItem[] {
  if (input === null) return [];
  if (Array.isArray(input) && input.length > MAX_ITEMS) {
    throw invalid("CONFIG_TOO_MANY_ITEMS", `'items' holds ${input.length} items; ${MAX_ITEMS} at most.`);
  }
  return parseItems(input, role);
}

/** Never a sensitive item's content: presentItem shows its SHA-256 instead. */
export function showItems(items: readonly DesiredItem[]): Record<string, unknown>[] {
  return items.map((item) => presentItem(item));
}
