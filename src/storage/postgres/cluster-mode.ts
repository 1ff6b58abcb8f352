import { type Config, ConfigError } from "../../config.js";

/**
 * Cluster mode is being built in steps (issue 18): today `wharf migrate` prepares a PostgreSQL
 * database, and nothing serves from one yet. Everything that would work on the data directory's
 * SQLite instead refuses while WHARF_DATABASE_URL is set, rather than quietly use another
 * database than the operator named.
 */
export function refuseWhileClusterModeIncomplete(config: Config, what: string): void {
  if (config.databaseUrl === undefined) return;
  throw new ConfigError(
    `${what} cannot use WHARF_DATABASE_URL yet: Wharf serves from PostgreSQL in a later release ` +
      `('wharf migrate' already prepares the database). Unset WHARF_DATABASE_URL to use the SQLite database in WHARF_DATA_DIR.`,
  );
}
