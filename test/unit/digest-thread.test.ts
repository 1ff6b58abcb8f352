import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { digestOffThread } from "../../src/storage/digest-thread.js";

const MiB = 1024 * 1024;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

describe("digests on the digest thread", () => {
  it("match the same digests computed here, for concurrent sessions of odd-sized chunks", async () => {
    const contents = [randomBytes(0), randomBytes(3), randomBytes(20 * MiB + 17), randomBytes(MiB)];
    const results = await Promise.all(
      contents.map(async (content) => {
        const session = digestOffThread(["md5", "sha1"]);
        // Chunks that straddle the 1 MiB batches, as a socket delivers them.
        for (let offset = 0; offset < content.length; offset += 65_531) {
          await session.update(content.subarray(offset, offset + 65_531));
        }
        return session.digest();
      }),
    );
    results.forEach((digests, index) => {
      const content = contents[index] ?? Buffer.alloc(0);
      expect(digests).toEqual({
        md5: createHash("md5").update(content).digest("hex"),
        sha1: createHash("sha1").update(content).digest("hex"),
      });
    });
  });

  it("copies what it is given: a chunk changed after update does not change the digest", async () => {
    const chunk = Buffer.from("first");
    const session = digestOffThread(["md5"]);
    await session.update(chunk);
    chunk.write("other");
    expect((await session.digest()).md5).toBe(createHash("md5").update("first").digest("hex"));
  });

  it("refuses a cancelled session's further use", async () => {
    const session = digestOffThread(["md5"]);
    await session.update(randomBytes(2 * MiB));
    session.cancel();
    await expect(session.update(Buffer.from("more"))).rejects.toThrow(/cancelled/);
    await expect(session.digest()).rejects.toThrow(/cancelled/);
  });

  it("keeps a process alive while a digest is awaited, and not after", async () => {
    const script = [
      `import { digestOffThread } from ${JSON.stringify(path.join(ROOT, "src/storage/digest-thread.ts"))};`,
      `const session = digestOffThread(["md5"]);`,
      `await session.update(Buffer.from("abc"));`,
      `console.log((await session.digest()).md5);`,
    ].join("\n");
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) => {
      execFile(
        process.execPath,
        ["--import", "tsx", "--input-type=module", "--eval", script],
        { cwd: ROOT, timeout: 20_000 },
        (error, out) => (error ? reject(error) : resolve({ stdout: out })),
      );
    });
    expect(stdout.trim()).toBe(createHash("md5").update("abc").digest("hex"));
  });
});
