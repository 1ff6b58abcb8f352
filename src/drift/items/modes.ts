/**
 * What the item handlers need of the item rules without the rules themselves: schema.ts validates
 * with zod, some 19 MB of resident memory that `wharf agent` (which runs the handlers on items
 * Wharf already validated) must not load. schema.ts re-exports these.
 */

/** A file's content (decoded), template or a config key's value. */
export const MAX_CONTENT_BYTES = 4 * 1024 * 1024;

/** "0644", "644", "0o644" or a number written with octal digits (644 means 0644). */
export function parseMode(value: unknown): number | undefined {
  let digits: string;
  if (typeof value === "string") digits = value.replace(/^0o/i, "");
  else if (typeof value === "number" && Number.isInteger(value) && value >= 0) digits = String(value);
  else return undefined;
  if (!/^[0-7]{1,5}$/.test(digits)) return undefined;
  const mode = parseInt(digits, 8);
  return mode <= 0o7777 ? mode : undefined;
}

/** Permission bits as four octal digits: 420 -> "0644". */
export function formatMode(mode: number): string {
  return mode.toString(8).padStart(4, "0");
}
