/** Small helpers shared by this area's repositories. */

/** Whether a better-sqlite3 error is this constraint violation (UNIQUE, FOREIGNKEY, ...). */
export function isConstraintError(error: unknown, kind: "UNIQUE" | "FOREIGNKEY"): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === `SQLITE_CONSTRAINT_${kind}` || (kind === "UNIQUE" && code === "SQLITE_CONSTRAINT_PRIMARYKEY");
}

/** Parses a JSON array column written by this area; anything else reads as empty. */
export function jsonList(text: string | null): string[] {
  if (text === null) return [];
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === "string") : [];
}
