import { changeWatchOf } from "./change-watch.js";
import type { Db } from "./database.js";

/**
 * Runs a synchronous write that no cache reads and that may be lost to a power cut (not to a
 * crash of the process), without moving the connection's ChangeWatch version and without an fsync
 * of its own: `synchronous = NORMAL` for its commit, so in WAL mode it appends to the log and the
 * connection's next ordinary commit (`synchronous = FULL`) syncs it along. For bookkeeping that
 * something durable can rebuild or that may safely happen twice: audit records (written after the
 * response), webhook fan-outs (their events stay pending until the fan-out commits) and delivery
 * attempts (a lost one is sent again; receivers deduplicate on the event id). Call it outside any
 * transaction, never for a write a client was told is stored.
 */
export function writeUnsynced<T>(db: Db, write: () => T): T {
  const watch = changeWatchOf(db);
  // exec, not a prepared statement: SQLite applies this pragma when it compiles it, and exec is
  // about ten times cheaper than db.pragma().
  db.exec("PRAGMA synchronous = NORMAL");
  try {
    return watch.quietly(write);
  } finally {
    db.exec("PRAGMA synchronous = FULL");
  }
}
