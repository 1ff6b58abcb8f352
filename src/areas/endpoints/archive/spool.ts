import { randomUUID } from "node:crypto";
import { mkdir, open, rm } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DomainError } from "../../../domain/errors.js";
import { ByteCounter } from "../../../storage/tgz.js";

/**
 * Runs `use` with the uploaded archive written to a new file under `tempDir`, and removes that
 * file afterwards whatever happens (a failed upload, a refused archive, a failed import). ZIPs
 * need random access, and a tar is read twice (checked, then extracted), so the body cannot be
 * read as it arrives. Past `maxBytes` the upload fails with too_large (413).
 */
export async function withSpooledUpload<T>(
  body: Readable,
  options: { tempDir: string; maxBytes: number },
  use: (file: string) => Promise<T>,
): Promise<T> {
  await mkdir(options.tempDir, { recursive: true });
  const file = path.join(options.tempDir, `import-${randomUUID()}`);
  // Opened (created) before the body is read: a write stream opens lazily, and a body refused at
  // once would have its file appear after the removal below.
  const handle = await open(file, "wx");
  try {
    const limit = new ByteCounter((bytes) => {
      if (bytes > options.maxBytes) {
        throw new DomainError(
          "too_large",
          "UPLOAD_TOO_LARGE",
          `The upload exceeds the limit of ${options.maxBytes} bytes.`,
        );
      }
    });
    await pipeline(body, limit, handle.createWriteStream());
    return await use(file);
  } finally {
    await handle.close().catch(() => undefined); // closed already unless the pipeline never ran
    await rm(file, { force: true });
  }
}
