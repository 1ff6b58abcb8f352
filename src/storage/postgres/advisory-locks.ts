/**
 * The advisory locks Wharf takes on PostgreSQL, in one place so that no two purposes share a key.
 * PostgreSQL's two-key form: the first key is Wharf's ("WHRF"), the second the purpose; other
 * applications on the same database keep clear of them unless they pick the same first key.
 */
export const WHARF_LOCK_SPACE = 0x57485246;

export const ADVISORY_LOCKS = {
  /** Held while the schema is migrated: one node (or `wharf migrate`) at a time. */
  migrate: 1,
  /** Held by `wharf cluster import` (cli/cluster-import.ts): one import into a database at a time. */
  clusterImport: 7,
  /*
   * Leaderships (leadership.ts): each held, on its own session, by the one node that runs that
   * background work for the whole cluster.
   */
  /** Routine configuration checks (drift collection on schedule). */
  configurationChecks: 2,
  /** Connector health checks. */
  connectorHealth: 3,
  /** Retention rules. */
  retention: 4,
  /** Garbage collection of unreferenced blobs in the shared object store. */
  blobGc: 5,
  /** Scheduled jobs (cron-like triggers) and the sweep of expired agent leases. */
  scheduler: 6,
} as const;
