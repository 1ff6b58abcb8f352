import path from "node:path";

/**
 * Every file and folder Wharf keeps directly under its data directory (WHARF_DATA_DIR), named
 * once: docs/architecture.md "The data directory" says what each one holds and who writes it.
 * The names are what an operator sees with `ls`, so messages use them.
 */
export const DATA_DIR_NAMES = Object.freeze({
  /** The SQLite database; in WAL mode it has two companions (`databaseFiles`). */
  database: "wharf.sqlite",
  /** Locked by the running server (data-dir-lock.ts); the CLI does not take it. */
  serverLock: "server.lock",
  /** Encrypts stored secrets, when no WHARF_SECRET_KEY(_FILE) is given (secret-keys.ts). */
  secretKey: "secret-key",
  /** The generated full-control key of the first start (areas/security/bootstrap.ts). */
  adminApiKey: "admin-api-key",
  /** Room kept for deletions on a full disk (space-reserve.ts). */
  spaceReserve: "space-reserve",
  /** Content-addressed blobs (file-blob-store.ts). */
  blobs: "blobs",
  /** Files being written or built; on the blobs' file system, emptied at every start. */
  tmp: "tmp",
  /** Multipart upload spools of asset directories; unlike tmp/, they survive restarts. */
  multipart: "multipart",
});

export type DataPaths = { readonly [Name in keyof typeof DATA_DIR_NAMES]: string } & {
  /** The database and SQLite's write-ahead log and shared-memory files beside it. */
  readonly databaseFiles: readonly string[];
};

/** The full paths of everything under `dataDir` (as configured: resolved by config.ts). */
export function dataPaths(dataDir: string): DataPaths {
  const at = (name: string) => path.join(dataDir, name);
  const database = at(DATA_DIR_NAMES.database);
  return Object.freeze({
    database,
    databaseFiles: [database, `${database}-wal`, `${database}-shm`],
    serverLock: at(DATA_DIR_NAMES.serverLock),
    secretKey: at(DATA_DIR_NAMES.secretKey),
    adminApiKey: at(DATA_DIR_NAMES.adminApiKey),
    spaceReserve: at(DATA_DIR_NAMES.spaceReserve),
    blobs: at(DATA_DIR_NAMES.blobs),
    tmp: at(DATA_DIR_NAMES.tmp),
    multipart: at(DATA_DIR_NAMES.multipart),
  });
}
