import { SqliteError } from "better-sqlite3";

/**
 * The drivers' constraint errors (SQLite's, and PostgreSQL's in cluster mode), named once.
 * Repositories check before they write; these are the backstops for a writer in another process
 * (the CLI, a second server, another node) that got in between, and repositories translate them
 * into domain errors (docs/STYLE.md, Errors).
 * A busy database is told apart by storage/busy.ts (isBusy).
 */

/** A UNIQUE or PRIMARY KEY constraint failed: the key is taken. */
export function isUniqueViolation(error: unknown): boolean {
  return (
    hasCode(error, "SQLITE_CONSTRAINT_UNIQUE") ||
    hasCode(error, "SQLITE_CONSTRAINT_PRIMARYKEY") ||
    hasSqlState(error, "23505")
  );
}

/** A FOREIGN KEY constraint failed: a referenced row is gone (or a referencing row still there). */
export function isForeignKeyViolation(error: unknown): boolean {
  return hasCode(error, "SQLITE_CONSTRAINT_FOREIGNKEY") || hasSqlState(error, "23503");
}

/** Any constraint failed (UNIQUE, PRIMARY KEY, FOREIGN KEY, CHECK, NOT NULL...). */
export function isConstraintViolation(error: unknown): boolean {
  return (
    (error instanceof SqliteError && error.code.startsWith("SQLITE_CONSTRAINT")) ||
    // SQLSTATE class 23: integrity constraint violation.
    postgresSqlState(error)?.startsWith("23") === true
  );
}

const hasCode = (error: unknown, code: string) => error instanceof SqliteError && error.code === code;

/**
 * The same failures on PostgreSQL (cluster mode), by SQLSTATE: pg's DatabaseError carries it in
 * `code`. Read structurally, so that SQLite's users do not load pg.
 */
function postgresSqlState(error: unknown): string | undefined {
  if (!(error instanceof Error) || error instanceof SqliteError) return undefined;
  const { code, severity } = error as { code?: unknown; severity?: unknown };
  return typeof code === "string" && typeof severity === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

const hasSqlState = (error: unknown, state: string) => postgresSqlState(error) === state;
