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
  // A checked-out connection that breaks between statements (a server restart, pg_terminate_backend)
  // emits 'error' too, and the pool listens only to idle ones: its holder learns of it from its next
  // statement, which fails, and releases it with that error, so the pool drops it.
  pool.on("connect", (client) => client.on("error", () => {}));
  pool.on("connect", storeNulAsReplacement);
  return pool;
}

/**
 * PostgreSQL's text cannot hold U+0000, which SQLite stores as any other character: a description
 * or name holding one would fail its statement (a 500) on a cluster and be saved on one machine.
 * Every string parameter of the node's connections therefore has U+0000 replaced by U+FFFD (the
 * replacement character, which is what the native API's XML shows for it on SQLite too), so the
 * write succeeds on both. JSON text is unaffected: JSON.stringify writes U+0000 as an escape.
 */
function storeNulAsReplacement(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const clean = (values: readonly unknown[]) =>
    values.map((value) =>
      typeof value === "string" && value.includes("\u0000") ? value.replaceAll("\u0000", "\uFFFD") : value,
    );
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const [text, values, ...rest] = args;
    if (Array.isArray(values)) return query(text, clean(values), ...rest);
    // A query config ({ text, values }); not a submittable (a cursor), which keeps its own state.
    if (isPlainConfig(text)) return query({ ...text, values: clean(text.values) }, values, ...rest);
    return query(...args);
  };
}

function isPlainConfig(value: unknown): value is { values: unknown[] } {
  return (
    typeof value === "object" &&
    value !== null &&
    Array.isArray((value as { values?: unknown }).values) &&
    typeof (value as { submit?: unknown }).submit !== "function"
  );
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
