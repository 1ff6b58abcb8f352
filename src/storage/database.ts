import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { ensurePrivateFiles, PRIVATE_DIRECTORY_MODE } from "./private-files.js";

export type Db = Database.Database;

/** migrations/ at the package root, both from src/ (tsx, vitest) and from dist/src/ (built). */
export const MIGRATIONS_DIR = findUp("migrations", path.dirname(fileURLToPath(import.meta.url)));

function findUp(name: string, from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, name);
    if (fs.existsSync(path.join(dir, "package.json")) && fs.existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`cannot find ${name}/ above ${from}`);
  }
}

/**
 * Opens (creating if needed) the metadata database with the pragmas every connection needs, and
 * brings its schema up to date. Several processes may open it at once (server and CLI): WAL and
 * busy_timeout make that safe. busy_timeout blocks the thread while another process holds a lock:
 * fine for the CLI, not for a server, whose app switches it off (storage/busy.ts).
 */
export function openDatabase(file: string, migrationsDir = MIGRATIONS_DIR): Db {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  // Private to the service's user; SQLite gives the WAL and shared-memory files the database's mode.
  if (file !== ":memory:") ensurePrivateFiles([file, `${file}-wal`, `${file}-shm`]);
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL"); // an acknowledged write survives a power cut
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  runMigrations(db, migrationsDir);
  return db;
}

/**
 * Forward-only migrations named `NNNN-description.sql`; `PRAGMA user_version` records the last one
 * applied. Each runs in its own transaction, so a failing migration leaves the previous state.
 */
export function runMigrations(db: Db, migrationsDir: string): void {
  const files = fs
    .readdirSync(migrationsDir)
    .filter((f) => /^\d{4}-.+\.sql$/.test(f))
    .sort();
  const current = db.pragma("user_version", { simple: true }) as number;
  for (const file of files) {
    const version = Number.parseInt(file.slice(0, 4), 10);
    if (version <= current) continue;
    const sql = fs.readFileSync(path.join(migrationsDir, file), "utf8");
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${version}`);
    }).immediate();
  }
}

/** True when the database answers a trivial query; used by /health. */
export function isDatabaseUsable(db: Db): boolean {
  try {
    db.prepare("SELECT 1").get();
    return true;
  } catch {
    return false;
  }
}
