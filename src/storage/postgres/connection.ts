import pg from "pg";

export type PostgresPool = pg.Pool;

/** PostgreSQL's type ids that Wharf reads as JavaScript numbers rather than strings. */
const INT8_OID = 20;

/**
 * Row values as the SQLite repositories give them: bigint (ids, sizes, counts) as a number.
 * pg gives int8 as a string because it may exceed 2^53; Wharf's ids and byte counts never do,
 * and a value that would is refused rather than silently rounded.
 */
const wharfTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID && format !== "binary") return parseSafeInteger;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

function parseSafeInteger(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`integer ${text} is beyond what Wharf can read exactly`);
  return value;
}

export interface PostgresOptions {
  /** Shown in pg_stat_activity: which node and which part of it holds a connection. */
  readonly applicationName: string;
  /** Connections kept at most (pg's default: 10). */
  readonly max?: number;
  /** Called when an idle connection fails (the server restarted, the network dropped it). */
  readonly onIdleError?: (error: Error) => void;
}

/**
 * A pool on WHARF_DATABASE_URL. Each connection works in UTC, so that timestamps written by the
 * database itself read the same on every node, and gives up on a statement after 60 s rather than
 * holding a request forever behind a lock.
 */
export function openPostgres(url: string, options: PostgresOptions): PostgresPool {
  const pool = new pg.Pool({
    connectionString: url,
    application_name: options.applicationName,
    max: options.max ?? 10,
    types: wharfTypes,
    options: "-c TimeZone=UTC -c statement_timeout=60000",
    connectionTimeoutMillis: 10_000,
  });
  // Without a listener, an idle connection's error (a server restart) would end the process.
  pool.on("error", (error) => options.onIdleError?.(error));
  return pool;
}

/** The URL without its password, for logs and messages: `postgres://wharf:***@db:5432/wharf`. */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    parsed.searchParams.delete("password");
    return parsed.toString();
  } catch {
    return "(an unreadable URL)";
  }
}
