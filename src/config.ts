import { isIP } from "node:net";
import path from "node:path";
import { z } from "zod";
import { type ProxySettings, proxyEnvironment } from "./net/outbound-proxy.js";
import type { StorageConfig } from "./domain/package-store.js";
import { parseSecretKey } from "./storage/secrets.js";
import { defaultStorageFromEnv } from "./storage/storage-env.js";

/**
 * The only reader of process.env. Every WHARF_* variable is validated here once; an invalid
 * value stops start-up with one message that names every bad variable.
 */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** Absolute path of the data directory (database, blobs, temp files, generated admin key). */
  readonly dataDir: string;
  /** When set, a full-control System API key with exactly this value is ensured at start-up. */
  readonly adminApiKey: string | undefined;
  /** Public base URL (no trailing slash) for absolute links when Wharf sits behind a proxy. */
  readonly baseUrl: string | undefined;
  /**
   * Addresses or CIDR ranges of the reverse proxies in front of Wharf, whose X-Forwarded-For is
   * believed for the client's address (failed sign-ins are counted per client address); none:
   * the peer's address is the client's.
   */
  readonly trustProxy: readonly string[] | undefined;
  /** How failed sign-ins and key guesses are slowed (areas/security/attempt-throttle.ts). */
  readonly signIn: {
    /** Failures from one address (IPv6: one /64) within the window before it must wait. */
    readonly addressFailures: number;
    /** The window, and the first wait of an address; each further wait within a day is twice as long. */
    readonly failureWindowSeconds: number;
    /** Failures at one user name before each further one makes it wait (1 s, 2 s, 4 s, ...). */
    readonly userFreeFailures: number;
    /** Longest wait of an address or a user name. */
    readonly maxWaitSeconds: number;
    /** Password hashes computed at once; sign-ins beyond a queue of eight per hash are answered 503. */
    readonly passwordChecks: number;
  };
  /** Signed-in browsers of the web UI (areas/web-ui/session/). */
  readonly uiSessions: {
    /** A session not used for this long ends (its last use is recorded at most once a minute). */
    readonly idleMinutes: number;
    /** A session ends this long after its sign-in, however much it is used. */
    readonly absoluteHours: number;
  };
  /** Largest accepted upload body, in bytes. */
  readonly maxUploadBytes: number;
  /**
   * Free space the data directory's disk must keep: below it uploads are refused (507) and
   * /health and /metrics warn; 0: no minimum (a full disk still answers 507).
   */
  readonly minFreeDiskBytes: number;
  /** Whether uploads may name their package by `content-url` (a server-side fetch); off by default. */
  readonly contentUrlUploads: boolean;
  /**
   * Whether server-side fetches (content-url, virtual package URL sources, connectors, webhooks)
   * may reach private and loopback addresses. Link-local and metadata addresses stay refused.
   */
  readonly fetchAllowPrivate: boolean;
  /** Bound on one server-side fetch as a whole: DNS, connect, redirects and the body. */
  readonly fetchTimeoutMs: number;
  /** Bound on the body of one server-side fetch, in bytes. */
  readonly fetchMaxBytes: number;
  /**
   * The proxies server-side fetches go through: HTTP_PROXY, HTTPS_PROXY and NO_PROXY (or their
   * lower-case spellings), read here like every setting; undefined: fetches connect directly.
   */
  readonly outboundProxy: ProxySettings | undefined;
  /** How long an unfinished multipart asset upload is kept before its parts are removed. */
  readonly multipartMaxAgeMs: number;
  /** How often blob garbage collection runs (storage/garbage-collector.ts); 0 = never on its own. */
  readonly gcIntervalMs: number;
  /** How often feeds' retention schedules are looked at (areas/retention/scheduler.ts); 0 = scheduled runs off. */
  readonly retentionCheckMs: number;
  /** Audit records older than this many days are pruned daily (areas/audit/); 0 keeps them forever. */
  readonly auditRetentionDays: number;
  /**
   * The package store of feeds that set none (storage/storage-env.ts: WHARF_PACKAGE_STORE and
   * WHARF_S3_* or WHARF_AZURE_*); absent = disk under the data directory. Holds credentials: never log it.
   */
  readonly defaultStorage?: StorageConfig;
  /** Entries an uploaded archive (package upload or import, asset directory import) may hold. */
  readonly archiveMaxEntries: number;
  /** How many times its own size an uploaded archive may expand to (storage/archives.ts). */
  readonly archiveMaxRatio: number;
  /** Seconds reading and checking an uploaded archive may take, plus as many again per MiB of it. */
  readonly archiveMaxSeconds: number;
  /**
   * The one server folder (absolute) that `/upack/<feed>/import` may read packages from by path;
   * undefined: imports from server paths are refused.
   */
  readonly importRoot: string | undefined;
  /** How often each connector's upstream is checked for connector health; 0 turns scheduled checks off. */
  readonly connectorHealthIntervalMs: number;
  /**
   * How long a connector's "not found" (404) metadata answer is kept and served without asking the
   * upstream again (never longer than the connector's metadataCacheMinutes); 0 keeps none.
   */
  readonly connectorNegativeCacheMs: number;
  /**
   * The directory (absolute) under which deployment plans' deploy-package steps may write;
   * undefined: such steps fail.
   */
  readonly deployRoot: string | undefined;
  /** Deployments executing at once; 0: this process runs none (they stay pending). */
  readonly deployConcurrency: number;
  /** How long closing waits for executing deployments before leaving them to the restart rule. */
  readonly deployStopTimeoutMs: number;
  /**
   * Cluster mode: how long a node's claim on a job (a deployment, a remediation, a retention run)
   * holds without a renewal; renewed every third of it. A job whose node died ends failed this long
   * after its last renewal (jobs/runner-postgres.ts); a node paused longer than this loses its jobs.
   */
  readonly jobLeaseMs: number;
  /** Configuration management (issue 13): how often every active server is checked; 0 turns routine checks off. */
  readonly configCheckIntervalMs: number;
  /** Configuration checks running at once. */
  readonly configCheckConcurrency: number;
  /** Work handed to an agent that reports no result within this time is failed. */
  readonly agentLeaseMs: number;
  /** An agent server not heard from for this long is in error ("not seen since ..."). */
  readonly agentOfflineMs: number;
  /** Connecting and each SSH operation on an `ssh` server must finish within this time. */
  readonly sshTimeoutMs: number;
  /**
   * How long a write waits, without blocking other requests, while another process holds the
   * database's write lock; then it answers 503 DATABASE_BUSY (storage/busy.ts).
   */
  readonly databaseBusyWaitMs: number;
  /** Timeouts and bounds of client connections (http/connection-guard.ts), so that none can be held by a stranger. */
  readonly connections: {
    /** A request's headers must arrive whole within this time. */
    readonly headersTimeoutMs: number;
    /** A client that sends nothing while its body is expected, or reads nothing of its answer, is cut after this. */
    readonly stallTimeoutMs: number;
    /** An idle keep-alive connection is closed after this. */
    readonly keepAliveTimeoutMs: number;
    /** Connections open at once; undefined: from the process's file-descriptor limit (http/fd-limit.ts). */
    readonly max: number | undefined;
    /** Connections open at once from one client: an address, or an IPv6 /64 (trusted proxies excepted). */
    readonly maxPerAddress: number;
  };
  /**
   * What a JSON or form body may cost before its sender is known (no credentials in the headers
   * or query string): its size, and the time it may take to arrive (http/pre-auth-body.ts).
   */
  readonly preAuthBody: { readonly maxBytes: number; readonly timeoutMs: number };
  /**
   * Response compression (http/compression.ts): the smallest body worth encoding, and brotli's
   * quality (0-11; dynamic responses want a low one: 11 costs ~50 times the CPU of 4).
   */
  readonly compression: { readonly minBytes: number; readonly brotliQuality: number };
  /**
   * What encrypts stored secrets (storage/secret-keys.ts): the key itself (WHARF_SECRET_KEY) or the
   * absolute path of a private file holding it (WHARF_SECRET_KEY_FILE), neither: `<data>/secret-key`,
   * generated at the first start; and previous keys, which only decrypt (rotation).
   */
  readonly secretKeys: { readonly key?: string; readonly file?: string; readonly previous: readonly string[] };
  /** Webhook deliveries (areas/webhooks/): each request's bound, retries and how often the queue is read. */
  readonly webhooks: {
    readonly timeoutMs: number;
    /** Attempts of one delivery before it is failed. */
    readonly attempts: number;
    /** Wait after the first failed attempt; each further wait is twice as long, at most `retryMaxMs`. */
    readonly retryFirstMs: number;
    readonly retryMaxMs: number;
    /** Requests in flight at once. */
    readonly concurrency: number;
    /** How often the event outbox and the due deliveries are read (events of other processes, retries). */
    readonly pollMs: number;
  };
  readonly logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /**
   * Cluster mode's PostgreSQL (storage/postgres/); undefined: the data directory's SQLite. Holds
   * the database password: never log it (describeDatabaseUrl gives a printable form).
   */
  readonly databaseUrl: string | undefined;
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
const DEFAULT_MAX_UPLOAD_BYTES = 10 * 1024 ** 3; // 10 GiB: asset directories take 2 GB+ files
// Room for the database, logs and uploads under way once new uploads stop; small enough for a laptop.
const DEFAULT_MIN_FREE_DISK_BYTES = 512 * 1024 ** 2;
// Node turns a larger timer delay into 1 ms (TimeoutOverflowWarning): every fetch would time out at once.
const MAX_TIMER_MS = 2 ** 31 - 1;

const byteCount = () =>
  z
    .string()
    .regex(/^[1-9]\d*$/, "must be a whole number of bytes greater than 0")
    .transform(Number)
    .refine(Number.isSafeInteger, "is too large");

/** A whole number within bounds, e.g. a count or a number of seconds. */
const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .refine((value) => value >= min && value <= max, `must be a whole number from ${min} to ${max}`);

/** A number of seconds, fractions allowed (tests use tenths), more than 0 and at most `max`; in milliseconds. */
const secondsAsMs = (max: number) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number of seconds")
    .transform(Number)
    .refine((seconds) => seconds > 0 && seconds <= max, `must be more than 0 and at most ${max}`)
    .transform((seconds) => Math.round(seconds * 1000));

/** `address` or `address/prefix`, comma-separated. */
const addressList = () =>
  z
    .string()
    .transform((value) => value.split(",").map((entry) => entry.trim()))
    .refine(
      (entries) =>
        entries.every((entry) => {
          const [address = "", prefix, extra] = entry.split("/");
          const version = isIP(address);
          if (version === 0 || extra !== undefined) return false;
          return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128));
        }),
      "must be IP addresses or CIDR ranges (10.0.0.0/8), comma-separated",
    );

/** A switch an administrator flips: the spellings shells and compose files commonly use, any case. */
const flag = () =>
  z
    .string()
    .regex(/^(true|false|1|0|yes|no)$/i, "must be true or false (also 1/0, yes/no)")
    .transform((value) => ["true", "1", "yes"].includes(value.toLowerCase()))
    .default(false);

const SECRET_KEY_FORMAT = "must be 32 bytes as 64 hex digits or base64 (e.g. `openssl rand -base64 32`)";
/** A key that encrypts stored secrets (storage/secrets.ts). */
function secretKey() {
  return z.string().refine((value) => parseSecretKey(value) !== undefined, SECRET_KEY_FORMAT);
}

const envSchema = z.object({
  WHARF_PORT: z
    .string()
    .regex(/^\d{1,5}$/, "must be a port number from 0 to 65535")
    .transform(Number)
    .refine((port) => port <= 65535, "must be a port number from 0 to 65535")
    .default(8624),
  WHARF_HOST: z.string().min(1).default("0.0.0.0"),
  WHARF_DATA_DIR: z.string().min(1).default("./data"),
  WHARF_DATABASE_URL: z
    // The message never repeats the value: it may hold a password.
    .url({ protocol: /^postgres(ql)?$/, error: "must be a postgres:// URL" })
    .optional(),
  WHARF_ADMIN_API_KEY: z
    .string()
    .min(16, "must be at least 16 characters")
    .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces")
    // A placeholder copied from an example is known to everyone who read it.
    .refine((key) => !/^change-?me/i.test(key), "must be a secret of your own, not an example's placeholder")
    .optional(),
  WHARF_BASE_URL: z
    .url({ protocol: /^https?$/, error: "must be an http(s) URL" })
    .transform((url) => url.replace(/\/+$/, ""))
    .optional(),
  WHARF_TRUST_PROXY: addressList().optional(),
  WHARF_AUTH_ADDRESS_FAILURES: wholeNumber(1, 10_000).default(10),
  WHARF_AUTH_FAILURE_WINDOW_SECONDS: wholeNumber(1, 86_400).default(60),
  WHARF_AUTH_USER_FREE_FAILURES: wholeNumber(0, 10_000).default(5),
  WHARF_AUTH_MAX_WAIT_SECONDS: wholeNumber(1, 86_400).default(300),
  WHARF_AUTH_PASSWORD_CHECKS: wholeNumber(1, 64).default(2),
  WHARF_UI_SESSION_IDLE_MINUTES: wholeNumber(5, 43_200).default(480),
  WHARF_UI_SESSION_HOURS: wholeNumber(1, 8_760).default(168),
  WHARF_MAX_UPLOAD_BYTES: byteCount().default(DEFAULT_MAX_UPLOAD_BYTES),
  WHARF_MIN_FREE_DISK_BYTES: z
    .string()
    .regex(/^\d+$/, "must be a whole number of bytes (0: no minimum)")
    .transform(Number)
    .refine(Number.isSafeInteger, "is too large")
    .default(DEFAULT_MIN_FREE_DISK_BYTES),
  WHARF_CONTENT_URL_UPLOADS: flag(),
  WHARF_FETCH_ALLOW_PRIVATE: flag(),
  WHARF_FETCH_TIMEOUT_MS: z
    .string()
    .regex(/^[1-9]\d*$/, "must be a whole number of milliseconds greater than 0")
    .transform(Number)
    .refine((ms) => ms <= MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} (about 24 days)`)
    .default(30_000),
  // Defaults to WHARF_MAX_UPLOAD_BYTES (below): a fetched package is an upload by other means.
  WHARF_FETCH_MAX_BYTES: byteCount().optional(),
  WHARF_MULTIPART_MAX_AGE_HOURS: z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number of hours")
    .transform(Number)
    .refine((hours) => hours > 0 && hours <= 24 * 365, "must be more than 0 and at most 8760 (a year)")
    .default(24),
  // Below setInterval's limit (about 24.8 days).
  WHARF_GC_INTERVAL_HOURS: z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number of hours (0 = off)")
    .transform(Number)
    .refine((hours) => hours <= 500, "must be at most 500 (0 = off)")
    .default(24),
  WHARF_RETENTION_CHECK_SECONDS: wholeNumber(0, 3600).default(30),
  WHARF_AUDIT_RETENTION_DAYS: wholeNumber(0, 36_500).default(365),
  // Capped where stored packages are still read (storage/archives.ts DEFAULT_ARCHIVE_LIMITS).
  WHARF_ARCHIVE_MAX_ENTRIES: wholeNumber(1, 100_000).default(10_000),
  WHARF_ARCHIVE_MAX_RATIO: wholeNumber(10, 1000).default(100),
  WHARF_ARCHIVE_MAX_SECONDS: z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number of seconds")
    .transform(Number)
    .refine((seconds) => seconds >= 0.1 && seconds <= 3600, "must be from 0.1 to 3600 (an hour)")
    .default(2),
  WHARF_IMPORT_ROOT: z.string().min(1).optional(),
  // Fractions down to 0.01 (0.6 s) let tests and demos watch a scheduled check happen.
  WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES: z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number of minutes")
    .transform(Number)
    .refine(
      (minutes) => minutes === 0 || (minutes >= 0.01 && minutes * 60_000 <= MAX_TIMER_MS),
      `must be 0 (off) or from 0.01 to ${Math.floor(MAX_TIMER_MS / 60_000)} (about 24 days)`,
    )
    .default(60),
  WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS: z
    .string()
    .regex(/^\d+$/, "must be a whole number of seconds")
    .transform(Number)
    .refine((seconds) => seconds <= 86_400, "must be at most 86400 (a day)")
    .default(60),
  WHARF_DEPLOY_ROOT: z.string().min(1).optional(),
  WHARF_DEPLOY_CONCURRENCY: z
    .string()
    .regex(/^\d{1,2}$/, "must be a whole number from 0 to 64")
    .transform(Number)
    .refine((count) => count <= 64, "must be a whole number from 0 to 64")
    .default(2),
  WHARF_DEPLOY_STOP_SECONDS: z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number of seconds")
    .transform(Number)
    .refine((seconds) => seconds <= 3600, "must be at most 3600 (an hour)")
    .default(10),
  // Below 3 s the renewals (every third) come so often that a slow query or a pause loses jobs.
  WHARF_JOB_LEASE_SECONDS: wholeNumber(3, 3600).default(30),
  // Fractions down to 0.01 (0.6 s), as for connector health, let tests watch a routine check happen.
  WHARF_CONFIG_CHECK_MINUTES: z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number of minutes")
    .transform(Number)
    .refine(
      (minutes) => minutes === 0 || (minutes >= 0.01 && minutes * 60_000 <= MAX_TIMER_MS),
      `must be 0 (off) or from 0.01 to ${Math.floor(MAX_TIMER_MS / 60_000)} (about 24 days)`,
    )
    .default(60),
  WHARF_CONFIG_CHECK_CONCURRENCY: wholeNumber(1, 64).default(4),
  WHARF_AGENT_LEASE_SECONDS: secondsAsMs(86_400).default(300_000),
  WHARF_AGENT_OFFLINE_SECONDS: secondsAsMs(86_400).default(120_000),
  WHARF_SSH_TIMEOUT_SECONDS: secondsAsMs(3600).default(20_000),
  WHARF_DB_BUSY_WAIT_MS: z
    .string()
    .regex(/^\d+$/, "must be a whole number of milliseconds")
    .transform(Number)
    .refine((ms) => ms <= 60_000, "must be at most 60000 (a minute)")
    .default(5_000),
  WHARF_HEADERS_TIMEOUT_SECONDS: secondsAsMs(3600).default(30_000),
  WHARF_STALL_TIMEOUT_SECONDS: secondsAsMs(3600).default(30_000),
  WHARF_KEEP_ALIVE_TIMEOUT_SECONDS: secondsAsMs(3600).default(10_000),
  WHARF_MAX_CONNECTIONS: wholeNumber(1, 1_000_000).optional(),
  WHARF_MAX_CONNECTIONS_PER_ADDRESS: wholeNumber(1, 1_000_000).default(256),
  WHARF_PRE_AUTH_BODY_BYTES: wholeNumber(1024, 1024 * 1024).default(64 * 1024),
  WHARF_PRE_AUTH_BODY_TIMEOUT_SECONDS: secondsAsMs(3600).default(30_000),
  WHARF_COMPRESSION_MIN_BYTES: wholeNumber(0, 64 * 1024 * 1024).default(1024),
  WHARF_COMPRESSION_BROTLI_QUALITY: wholeNumber(0, 11).default(4),
  WHARF_SECRET_KEY: secretKey().optional(),
  WHARF_SECRET_KEY_FILE: z.string().min(1).optional(),
  WHARF_SECRET_KEY_PREVIOUS: z
    .string()
    .transform((value) => value.split(/[\s,]+/).filter((key) => key !== ""))
    .refine((keys) => keys.every((key) => parseSecretKey(key) !== undefined), SECRET_KEY_FORMAT)
    .optional(),
  WHARF_WEBHOOK_TIMEOUT_SECONDS: secondsAsMs(300).default(10_000),
  WHARF_WEBHOOK_ATTEMPTS: wholeNumber(1, 50).default(8),
  WHARF_WEBHOOK_RETRY_SECONDS: secondsAsMs(86_400).default(30_000),
  WHARF_WEBHOOK_RETRY_MAX_SECONDS: secondsAsMs(86_400).default(3_600_000),
  WHARF_WEBHOOK_CONCURRENCY: wholeNumber(1, 64).default(4),
  WHARF_WEBHOOK_POLL_SECONDS: secondsAsMs(3600).default(5_000),
  WHARF_LOG_LEVEL: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(", ")}` }).default("info"),
});

/** Every variable loadConfig reads (the README's Configuration table documents each: test/unit/readme-config.test.ts). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export function loadConfig(env: NodeJS.ProcessEnv, cwd = process.cwd()): Config {
  // An empty variable means "not set", as a shell user would expect from `WHARF_X= wharf serve`.
  const present = Object.fromEntries(
    Object.entries(env).filter(([name, value]) => name.startsWith("WHARF_") && value !== ""),
  );
  const parsed = envSchema.safeParse(present);
  const proxy = proxyEnvironment(env);
  if (!parsed.success || proxy.problems.length > 0) {
    const issues = parsed.success ? [] : parsed.error.issues;
    const problems = [...issues.map((issue) => `${String(issue.path[0])}: ${issue.message}`), ...proxy.problems];
    throw new ConfigError(`Invalid configuration: ${problems.join("; ")}`);
  }
  const v = parsed.data;
  let defaultStorage: StorageConfig | undefined;
  try {
    defaultStorage = defaultStorageFromEnv(present);
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (v.WHARF_SECRET_KEY !== undefined && v.WHARF_SECRET_KEY_FILE !== undefined) {
    throw new ConfigError("Invalid configuration: WHARF_SECRET_KEY_FILE: give either it or WHARF_SECRET_KEY, not both");
  }
  return Object.freeze({
    port: v.WHARF_PORT,
    host: v.WHARF_HOST,
    dataDir: path.resolve(cwd, v.WHARF_DATA_DIR),
    adminApiKey: v.WHARF_ADMIN_API_KEY,
    baseUrl: v.WHARF_BASE_URL,
    trustProxy: v.WHARF_TRUST_PROXY,
    signIn: Object.freeze({
      addressFailures: v.WHARF_AUTH_ADDRESS_FAILURES,
      failureWindowSeconds: v.WHARF_AUTH_FAILURE_WINDOW_SECONDS,
      userFreeFailures: v.WHARF_AUTH_USER_FREE_FAILURES,
      maxWaitSeconds: v.WHARF_AUTH_MAX_WAIT_SECONDS,
      passwordChecks: v.WHARF_AUTH_PASSWORD_CHECKS,
    }),
    uiSessions: Object.freeze({
      idleMinutes: v.WHARF_UI_SESSION_IDLE_MINUTES,
      absoluteHours: v.WHARF_UI_SESSION_HOURS,
    }),
    maxUploadBytes: v.WHARF_MAX_UPLOAD_BYTES,
    minFreeDiskBytes: v.WHARF_MIN_FREE_DISK_BYTES,
    contentUrlUploads: v.WHARF_CONTENT_URL_UPLOADS,
    fetchAllowPrivate: v.WHARF_FETCH_ALLOW_PRIVATE,
    fetchTimeoutMs: v.WHARF_FETCH_TIMEOUT_MS,
    fetchMaxBytes: v.WHARF_FETCH_MAX_BYTES ?? v.WHARF_MAX_UPLOAD_BYTES,
    outboundProxy: proxy.settings,
    multipartMaxAgeMs: v.WHARF_MULTIPART_MAX_AGE_HOURS * 3_600_000,
    gcIntervalMs: Math.round(v.WHARF_GC_INTERVAL_HOURS * 3_600_000),
    retentionCheckMs: v.WHARF_RETENTION_CHECK_SECONDS * 1000,
    auditRetentionDays: v.WHARF_AUDIT_RETENTION_DAYS,
    ...(defaultStorage === undefined ? {} : { defaultStorage }),
    archiveMaxEntries: v.WHARF_ARCHIVE_MAX_ENTRIES,
    archiveMaxRatio: v.WHARF_ARCHIVE_MAX_RATIO,
    archiveMaxSeconds: v.WHARF_ARCHIVE_MAX_SECONDS,
    importRoot: v.WHARF_IMPORT_ROOT === undefined ? undefined : path.resolve(cwd, v.WHARF_IMPORT_ROOT),
    connectorHealthIntervalMs: Math.round(v.WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES * 60_000),
    connectorNegativeCacheMs: v.WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS * 1000,
    deployRoot: v.WHARF_DEPLOY_ROOT === undefined ? undefined : path.resolve(cwd, v.WHARF_DEPLOY_ROOT),
    deployConcurrency: v.WHARF_DEPLOY_CONCURRENCY,
    deployStopTimeoutMs: Math.round(v.WHARF_DEPLOY_STOP_SECONDS * 1000),
    jobLeaseMs: v.WHARF_JOB_LEASE_SECONDS * 1000,
    configCheckIntervalMs: Math.round(v.WHARF_CONFIG_CHECK_MINUTES * 60_000),
    configCheckConcurrency: v.WHARF_CONFIG_CHECK_CONCURRENCY,
    agentLeaseMs: v.WHARF_AGENT_LEASE_SECONDS,
    agentOfflineMs: v.WHARF_AGENT_OFFLINE_SECONDS,
    sshTimeoutMs: v.WHARF_SSH_TIMEOUT_SECONDS,
    databaseBusyWaitMs: v.WHARF_DB_BUSY_WAIT_MS,
    connections: Object.freeze({
      headersTimeoutMs: v.WHARF_HEADERS_TIMEOUT_SECONDS,
      stallTimeoutMs: v.WHARF_STALL_TIMEOUT_SECONDS,
      keepAliveTimeoutMs: v.WHARF_KEEP_ALIVE_TIMEOUT_SECONDS,
      max: v.WHARF_MAX_CONNECTIONS,
      maxPerAddress: v.WHARF_MAX_CONNECTIONS_PER_ADDRESS,
    }),
    preAuthBody: Object.freeze({
      maxBytes: v.WHARF_PRE_AUTH_BODY_BYTES,
      timeoutMs: v.WHARF_PRE_AUTH_BODY_TIMEOUT_SECONDS,
    }),
    compression: Object.freeze({
      minBytes: v.WHARF_COMPRESSION_MIN_BYTES,
      brotliQuality: v.WHARF_COMPRESSION_BROTLI_QUALITY,
    }),
    secretKeys: Object.freeze({
      ...(v.WHARF_SECRET_KEY === undefined ? {} : { key: v.WHARF_SECRET_KEY }),
      ...(v.WHARF_SECRET_KEY_FILE === undefined ? {} : { file: path.resolve(cwd, v.WHARF_SECRET_KEY_FILE) }),
      previous: Object.freeze(v.WHARF_SECRET_KEY_PREVIOUS ?? []),
    }),
    webhooks: Object.freeze({
      timeoutMs: v.WHARF_WEBHOOK_TIMEOUT_SECONDS,
      attempts: v.WHARF_WEBHOOK_ATTEMPTS,
      retryFirstMs: v.WHARF_WEBHOOK_RETRY_SECONDS,
      retryMaxMs: Math.max(v.WHARF_WEBHOOK_RETRY_SECONDS, v.WHARF_WEBHOOK_RETRY_MAX_SECONDS),
      concurrency: v.WHARF_WEBHOOK_CONCURRENCY,
      pollMs: v.WHARF_WEBHOOK_POLL_SECONDS,
    }),
    logLevel: v.WHARF_LOG_LEVEL,
    databaseUrl: v.WHARF_DATABASE_URL,
  });
}
