import { randomBytes } from "node:crypto";
import { rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Db } from "./database.js";
import { dataPaths } from "./data-paths.js";
import { diskFullEvenForDeletion, isDiskFull } from "./disk-full.js";

/**
 * A file kept beside the database for one purpose: on a full disk, removing it gives the database
 * room to record deletions. In WAL mode even a DELETE first appends to the log, so without it the
 * very way to free space (deleting old versions) fails once the disk is full. The server makes it
 * again once there is room (disk-space.ts); any process that deletes may give it up.
 */
export const RESERVE_BYTES = 8 * 1024 * 1024;
/** Random, not zeros: a compressing filesystem (ZFS, btrfs) would store zeros in no space at all. */
const FILL_BYTES = 1024 * 1024;

/** Where the database's reserve lives; undefined for an in-memory database. */
export function reserveDirOf(db: Db): string | undefined {
  return db.memory ? undefined : path.dirname(db.name);
}

export async function hasReserve(dir: string): Promise<boolean> {
  const info = await stat(dataPaths(dir).spaceReserve).catch(() => undefined);
  return info !== undefined && info.size >= RESERVE_BYTES;
}

/** Writes the reserve; false, leaving nothing behind, when the disk has no room for it. */
export async function makeReserve(dir: string): Promise<boolean> {
  // Written aside and renamed, so that a reserve found under its name is always whole.
  const reserve = dataPaths(dir).spaceReserve;
  const partial = `${reserve}.partial`;
  try {
    // Not fsynced: filesystems count delayed allocations as used at once, which is all that matters.
    await writeFile(partial, Buffer.alloc(RESERVE_BYTES, randomBytes(FILL_BYTES)), { mode: 0o600 });
    await rename(partial, reserve);
    return true;
  } catch (error) {
    await rm(partial, { force: true });
    if (isDiskFull(error)) return false;
    throw error;
  }
}

/** Removes the reserve (removing a file needs no space); false when there was none. */
async function giveUpReserve(dir: string): Promise<boolean> {
  try {
    await unlink(dataPaths(dir).spaceReserve);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/**
 * Runs a transaction that deletes rows (and so, with their blobs, frees space). When the disk is
 * too full for the database to record it, the reserve is given up and the transaction runs once
 * more: a concurrent deletion may have taken the reserve a moment ago, which made room as well.
 * Still no room: 507 (insufficient_storage) instead of a driver error.
 */
export async function runDeletion<T>(db: Db, transaction: () => T): Promise<T> {
  try {
    return transaction();
  } catch (error) {
    if (!isDiskFull(error)) throw error;
    const dir = reserveDirOf(db);
    if (dir !== undefined) await giveUpReserve(dir);
  }
  try {
    return transaction();
  } catch (error) {
    throw isDiskFull(error) ? diskFullEvenForDeletion(error) : error;
  }
}
