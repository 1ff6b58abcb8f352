import { type Config, ConfigError } from "../../config.js";

/**
 * The CLI's data commands (`wharf feeds`, `wharf gc`, `wharf storage`, ...) work on the data
 * directory's SQLite, beside or without a server. In cluster mode the metadata is on PostgreSQL
 * and every node serves the same API: they refuse while WHARF_DATABASE_URL is set, rather than
 * quietly work on another database than the one the operator named.
 */
export function refuseInClusterMode(config: Config, what: string): void {
  if (config.databaseUrl === undefined) return;
  throw new ConfigError(
    `${what} works on the data directory's SQLite database and cannot use WHARF_DATABASE_URL: in cluster mode, ` +
      `use the HTTP API of any node. Unset WHARF_DATABASE_URL to use the SQLite database in WHARF_DATA_DIR.`,
  );
}

/**
 * What a node needs beyond WHARF_DATABASE_URL to serve in cluster mode (docs/cluster-mode.md,
 * Topology); a ConfigError naming the setting otherwise:
 * - the same secret key on every node, given (WHARF_SECRET_KEY or WHARF_SECRET_KEY_FILE): a key
 *   generated in one node's data directory would leave the others unable to read stored
 *   credentials or one another's UI session cookies;
 * - a server-wide package store that every node reaches (WHARF_PACKAGE_STORE, S3 or Azure): the
 *   data directory's disk is one node's alone.
 */
export function assertClusterConfig(config: Config): void {
  if (config.secretKeys.key === undefined && config.secretKeys.file === undefined) {
    throw new ConfigError(
      "Cluster mode (WHARF_DATABASE_URL) needs WHARF_SECRET_KEY or WHARF_SECRET_KEY_FILE, the same on every node: " +
        "stored credentials and UI sessions must read the same on all of them.",
    );
  }
  if (config.defaultStorage === undefined || config.defaultStorage.id === "disk") {
    throw new ConfigError(
      "Cluster mode (WHARF_DATABASE_URL) needs WHARF_PACKAGE_STORE naming an S3 or Azure store that every node reaches: " +
        "the data directory's disk is one node's alone.",
    );
  }
}
