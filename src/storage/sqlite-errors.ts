import { SqliteError } from "better-sqlite3";

/**
 * The driver's constraint errors, named once. Repositories check before they write; these are the
 * backstops for a writer in another process (the CLI, a second server on the same file) that got
 * in between, and repositories translate them into domain errors (docs/STYLE.md, Errors).
 * A busy database is told apart by storage/busy.ts (isBusy).
 */

/** A UNIQUE or PRIMARY KEY constraint failed: the key is taken. */
export function isUniqueViolation(error: unknown): boolean {
  return hasCode(error, "SQLITE_CONSTRAINT_UNIQUE") || hasCode(error, "SQLITE_CONSTRAINT_PRIMARYKEY");
}

/** A FOREIGN KEY constraint failed: a referenced row is gone (or a referencing row still there). */
export function isForeignKeyViolation(error: unknown): boolean {
  return hasCode(error, "SQLITE_CONSTRAINT_FOREIGNKEY");
}

/** Any constraint failed (UNIQUE, PRIMARY KEY, FOREIGN KEY, CHECK, NOT NULL...). */
export function isConstraintViolation(error: unknown): boolean {
  return error instanceof SqliteError && error.code.startsWith("SQLITE_CONSTRAINT");
}

const hasCode = (error: unknown, code: string) => error instanceof SqliteError && error.code === code;
