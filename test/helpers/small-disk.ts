import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const FILLER = "filler";

/**
 * A real small filesystem (tmpfs) that a test can fill to the last byte, so that the server meets
 * ENOSPC and SQLITE_FULL the way it would on a full disk. Mounting needs root (CAP_SYS_ADMIN);
 * `.ci/run` and the development container run as root.
 */
export interface SmallDisk {
  /** The mount point. */
  readonly dir: string;
  /** Free bytes as an unprivileged writer sees them. */
  freeBytes(): Promise<number>;
  /** Writes a filler file until only `leaveBytes` are free (0: until the filesystem refuses another byte). */
  fill(leaveBytes?: number): Promise<void>;
  /** Removes the filler file: the space comes back. */
  unfill(): Promise<void>;
  unmount(): Promise<void>;
}

/** Mounts a tmpfs of `sizeBytes`; where mounting is not permitted, says why instead. */
export async function mountSmallDisk(sizeBytes: number): Promise<SmallDisk | { refused: string }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-small-disk-"));
  try {
    await run("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes},mode=0700`, "tmpfs", dir]);
  } catch (error) {
    await fs.rm(dir, { recursive: true, force: true });
    return { refused: error instanceof Error ? error.message.trim() : String(error) };
  }
  const filler = path.join(dir, FILLER);
  const freeBytes = async () => {
    const info = await fs.statfs(dir);
    return info.bavail * info.bsize;
  };
  return {
    dir,
    freeBytes,
    async fill(leaveBytes = 0) {
      const handle = await fs.open(filler, "a");
      try {
        const goal = (await freeBytes()) - leaveBytes;
        const block = Buffer.alloc(64 * 1024, 0x5a);
        for (let written = 0; written < goal;) {
          const { bytesWritten } = await handle.write(block, 0, Math.min(block.length, goal - written));
          written += bytesWritten;
        }
        // To the last page: what statfs counted as free may not all be writable in large blocks.
        if (leaveBytes === 0) for (;;) await handle.write(block, 0, 1024);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      } finally {
        await handle.close();
      }
    },
    async unfill() {
      await fs.rm(filler, { force: true });
    },
    async unmount() {
      await run("umount", [dir]);
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
