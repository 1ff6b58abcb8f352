import { createHash } from "node:crypto";
import fs from "node:fs";
import { open } from "node:fs/promises";

/**
 * The upload baseline (issue "speed"): a plain Node script that reads a file, hashes its bytes
 * with SHA-1 and SHA-256 and writes them to a new file in the same pass, as Wharf's blob store
 * does with an upload. `--fsync` ends with an fsync, as the blob store must (an acknowledged
 * upload survives a power cut); without it the bytes may still sit in the page cache.
 *
 * Usage: `node --import tsx bench/upack-upload-baseline.ts <source> <target> [--fsync]`; prints
 * `{"bytes": n, "ms": t, "cpuSec": s}` (the copy alone, not process start-up). The target is removed afterwards.
 */

const [source, target, flag] = process.argv.slice(2);
if (source === undefined || target === undefined) throw new Error("usage: <source> <target> [--fsync]");

const started = process.hrtime.bigint();
const cpuBefore = process.cpuUsage();
const sha1 = createHash("sha1");
const sha256 = createHash("sha256");
const handle = await open(target, "wx");
let bytes = 0;
try {
  for await (const chunk of fs.createReadStream(source, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    sha1.update(chunk);
    sha256.update(chunk);
    for (let offset = 0; offset < chunk.length;) {
      offset += (await handle.write(chunk, offset)).bytesWritten;
    }
    bytes += chunk.length;
  }
  if (flag === "--fsync") await handle.sync();
} finally {
  await handle.close();
}
const digests = [sha1.digest("hex"), sha256.digest("hex")];
const ms = Number(process.hrtime.bigint() - started) / 1e6;
const cpu = process.cpuUsage(cpuBefore);
fs.rmSync(target, { force: true });
process.stdout.write(`${JSON.stringify({ bytes, ms, cpuSec: (cpu.user + cpu.system) / 1e6, sha256: digests[1] })}\n`);
