import { statfs } from "node:fs/promises";
import { isPostgres, type MetadataDb } from "./metadata-db.js";
import { diskFull, diskSpaceLow } from "./disk-full.js";
import { hasReserve, makeReserve, RESERVE_BYTES, reserveDirOf } from "./space-reserve.js";

/** Free space is measured at most this often: every upload, /health and /metrics ask. */
const FRESH_MS = 1_000;
/** Free space needed to make the space reserve: as much again stays free for everything else. */
const RESERVE_ROOM_BYTES = 2 * RESERVE_BYTES;

export interface DiskStatus {
  /** Bytes the server may still write where the data directory is; undefined when the system cannot tell. */
  readonly freeBytes: number | undefined;
  /** Free bytes uploads need: the configured minimum, or room to make the space reserve again if it was given up. */
  readonly requiredBytes: number;
  /** Free space is below `requiredBytes`: uploads are refused until there is room again. */
  readonly low: boolean;
}

/**
 * Watches the free space of the data directory's filesystem, so that uploads are refused cleanly
 * (507) before the disk fills instead of failing half-way, and keeps the database's space reserve
 * (space-reserve.ts) in place whenever there is room for it. Nothing needs a restart: a status
 * is never older than FRESH_MS.
 */
export interface DiskSpace {
  /** The configured minimum of free space for uploads (WHARF_MIN_FREE_DISK_BYTES); 0: no minimum. */
  readonly minimumFreeBytes: number;
  status(): Promise<DiskStatus>;
  /** Throws insufficient_storage (507) when free space is low: called before an upload's body is read. */
  assertRoomForUpload(): Promise<void>;
}

export interface DiskSpaceOptions {
  readonly dataDir: string;
  /** The database whose space reserve is kept (beside its file); PostgreSQL's disk is not this node's to guard. */
  readonly db: MetadataDb;
  readonly minimumFreeBytes: number;
  /** Told when the reserve cannot be made for another reason than a full disk (permissions). */
  readonly onReserveError?: (error: unknown) => void;
}

export function createDiskSpace(options: DiskSpaceOptions): DiskSpace {
  const { dataDir, minimumFreeBytes } = options;
  const reserveDir = isPostgres(options.db) ? undefined : reserveDirOf(options.db);
  let known: { readonly status: DiskStatus; readonly at: number } | undefined;
  let measuring: Promise<DiskStatus> | undefined;

  /**
   * Makes the reserve when it is missing and there is room for it with as much to spare; true when
   * it is still missing for lack of room. Made before uploads may take any room: on a full disk,
   * deletions need it more than uploads need the space. A reserve that cannot be made for another
   * reason (permissions) is told of and does not hold uploads back.
   */
  async function reserveLacksRoom(freeBytes: number): Promise<boolean> {
    if (reserveDir === undefined || (await hasReserve(reserveDir))) return false;
    if (freeBytes < RESERVE_ROOM_BYTES) return true;
    try {
      return !(await makeReserve(reserveDir));
    } catch (error) {
      options.onReserveError?.(error);
      return false;
    }
  }

  async function measure(): Promise<DiskStatus> {
    const before = await freeBytesOf(dataDir);
    if (before === undefined) return { freeBytes: undefined, requiredBytes: minimumFreeBytes, low: false };
    const lacksReserve = await reserveLacksRoom(before);
    const freeBytes = (await freeBytesOf(dataDir)) ?? before;
    const requiredBytes = lacksReserve ? Math.max(minimumFreeBytes, RESERVE_ROOM_BYTES) : minimumFreeBytes;
    // A disk with nothing free is low whatever the minimum (0 included).
    return { freeBytes, requiredBytes, low: lacksReserve || freeBytes < Math.max(requiredBytes, 1) };
  }

  async function status(): Promise<DiskStatus> {
    if (known !== undefined && Date.now() - known.at < FRESH_MS) return known.status;
    // Callers arriving while it is measured share the one measurement.
    measuring ??= measure()
      .then((measured) => {
        known = { status: measured, at: Date.now() };
        return measured;
      })
      .finally(() => {
        measuring = undefined;
      });
    return measuring;
  }

  return {
    minimumFreeBytes,
    status,
    async assertRoomForUpload() {
      const { freeBytes = 0, requiredBytes, low } = await status();
      if (!low) return;
      throw freeBytes === 0 ? diskFull("the upload was not accepted") : diskSpaceLow(freeBytes, requiredBytes);
    },
  };
}

/** Bytes an unprivileged writer may still use (root may have a little more). */
async function freeBytesOf(dir: string): Promise<number | undefined> {
  try {
    const info = await statfs(dir);
    return info.bavail * info.bsize;
  } catch {
    // A data directory that is not there yet, or a system that cannot tell: uploads find out by writing.
    return undefined;
  }
}
