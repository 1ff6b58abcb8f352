/**
 * Lenient parameter reading that real clients need (docs/compat.md 0.1, 0.2): names are matched
 * case-insensitively, empty values count as absent, booleans arrive as True/False and even
 * `true)`.
 */

import { invalid } from "../domain/errors.js";

export type QueryLike = Record<string, unknown> | undefined | null;

/** The first non-empty string value of a parameter, matched case-insensitively by name. */
export function param(source: QueryLike, ...names: string[]): string | undefined {
  if (!source || typeof source !== "object") return undefined;
  const wanted = new Set(names.map((n) => n.toLowerCase()));
  for (const [name, value] of Object.entries(source)) {
    if (!wanted.has(name.toLowerCase())) continue;
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === "string" && first !== "") return first;
    if (typeof first === "number" || typeof first === "boolean") return String(first);
  }
  return undefined;
}

/** Whether a parameter is present at all (a bare flag like `?latest` counts), case-insensitively. */
export function hasParam(source: QueryLike, name: string): boolean {
  if (!source || typeof source !== "object") return false;
  return Object.keys(source).some((key) => key.toLowerCase() === name.toLowerCase());
}

/** "starts with true", case-insensitively: accepts true, True, TRUE and pgutil's `true)`. */
export function parseBoolean(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  const v = value.trim().toLowerCase();
  if (v.startsWith("true") || v === "1" || v === "yes" || v === "y") return true;
  if (v.startsWith("false") || v === "0" || v === "no" || v === "n") return false;
  return fallback;
}

/** `count`: absent means `max`; larger values are capped at `max`, anything but digits is refused. */
export function countParam(query: QueryLike, max: number): number {
  const text = param(query, "count");
  if (text === undefined) return max;
  if (!/^\s*\d+\s*$/.test(text)) throw invalid("INVALID_COUNT", "'count' must be a non-negative integer.");
  return Math.min(Number(text), max);
}
