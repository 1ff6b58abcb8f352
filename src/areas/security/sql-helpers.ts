/** Small helpers shared by this area's repositories (constraint errors: storage/sqlite-errors.ts). */

/** Parses a JSON array column written by this area; anything else reads as empty. */
export function jsonList(text: string | null): string[] {
  if (text === null) return [];
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === "string") : [];
}
