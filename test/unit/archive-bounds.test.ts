import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { DomainError } from "../../src/domain/errors.js";
import {
  type ArchiveLimits,
  DEFAULT_ARCHIVE_LIMITS,
  UPLOAD_ARCHIVE_LIMITS,
  uploadArchiveLimits,
} from "../../src/storage/archives.js";
import { tgzToZipFile } from "../../src/storage/tgz.js";
import { readTgz } from "../../src/storage/tgz-read.js";
import { openZip } from "../../src/storage/zip.js";
import { tgzBomb, tgzOfEmptyFiles } from "../helpers/hostile-archives.js";
import { buildZip } from "../helpers/upack-fixtures.js";

/**
 * The bounds of storage/archives.ts on the work one archive may cause (issue 11 section 7):
 * entries (empty ones included), declared and streamed expansion, and time.
 */

const MiB = 1024 * 1024;
let dir: string;
let bomb: Buffer;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "wharf-archive-bounds-"));
  bomb = tgzBomb(1024 * MiB);
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

/** The bytes as a stream of 64 KiB chunks that counts what its reader took. */
function counted(bytes: Buffer): { stream: Readable; taken: () => number } {
  let taken = 0;
  const stream = Readable.from(
    (function* () {
      for (let at = 0; at < bytes.length; at += 64 * 1024) {
        const chunk = bytes.subarray(at, at + 64 * 1024);
        taken += chunk.length;
        yield chunk;
      }
    })(),
  );
  return { stream, taken: () => taken };
}

async function refusal(work: Promise<unknown>): Promise<DomainError> {
  const error = await work.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}

const visitNothing = async () => undefined;
/** A budget spent before the first entry: whatever the machine's speed, the time bound trips at once. */
const spent: ArchiveLimits = { ...UPLOAD_ARCHIVE_LIMITS, maxSeconds: -1 };

describe("gzip bombs", () => {
  it("are refused by the size their entry declares, before its data is expanded or even read", async () => {
    const source = counted(bomb);
    const error = await refusal(readTgz(source.stream, UPLOAD_ARCHIVE_LIMITS, visitNothing, bomb.length));
    expect(error).toMatchObject({ kind: "too_large", code: "ARCHIVE_RATIO_EXCEEDED" });
    expect(error.message).toContain("expands more than 100 times");
    expect(source.taken()).toBeLessThan(bomb.length / 4);
  });

  it("are cut off as they expand when the archive's size is not known, not drained", async () => {
    const source = counted(bomb);
    const error = await refusal(readTgz(source.stream, UPLOAD_ARCHIVE_LIMITS, visitNothing));
    expect(error).toMatchObject({ kind: "too_large", code: "ARCHIVE_RATIO_EXCEEDED" });
    expect(source.taken()).toBeLessThan(bomb.length / 4);
  });

  it("are refused by a conversion (package uploads) without a ZIP left behind", async () => {
    const dest = path.join(dir, "bomb.zip");
    const source = counted(bomb);
    const error = await refusal(
      tgzToZipFile(source.stream, dest, UPLOAD_ARCHIVE_LIMITS, { prefix: "package/" }, bomb.length),
    );
    expect(error.code).toBe("ARCHIVE_RATIO_EXCEEDED");
    expect(source.taken()).toBeLessThan(bomb.length / 4);
    expect(existsSync(dest)).toBe(false);
  });
});

describe("entries", () => {
  it("counts empty files like any other entry", async () => {
    const limits = { ...UPLOAD_ARCHIVE_LIMITS, maxEntries: 50 };
    const fifty = await tgzOfEmptyFiles(50);
    let visited = 0;
    await readTgz(Readable.from([fifty]), limits, async () => void visited++, fifty.length);
    expect(visited).toBe(50);
    const more = await tgzOfEmptyFiles(51);
    const error = await refusal(readTgz(Readable.from([more]), limits, visitNothing, more.length));
    expect(error).toMatchObject({
      code: "ARCHIVE_TOO_MANY_ENTRIES",
      message: "The archive has more than 50 entries (WHARF_ARCHIVE_MAX_ENTRIES).",
    });
  });

  it("converts many empty files into a ZIP that holds every one of them", async () => {
    const dest = path.join(dir, "empties.zip");
    const tgz = await tgzOfEmptyFiles(1000);
    await tgzToZipFile(Readable.from([tgz]), dest, UPLOAD_ARCHIVE_LIMITS, { prefix: "package/" }, tgz.length);
    const reader = await openZip(dest);
    try {
      expect(reader.entries()).toHaveLength(1000);
      expect(reader.entries().every((entry) => entry.size === 0 && entry.name.startsWith("package/empty-"))).toBe(true);
      expect((await reader.readText("package/empty-999", 10)).length).toBe(0);
    } finally {
      await reader.close();
    }
  });
});

describe("the time bound", () => {
  it("refuses an archive that is not checked in time: tar read, tar converted, ZIP opened", async () => {
    const tgz = await tgzOfEmptyFiles(10);
    for (const work of [
      readTgz(Readable.from([tgz]), spent, visitNothing, tgz.length),
      tgzToZipFile(Readable.from([tgz]), path.join(dir, "slow.zip"), spent, { prefix: "" }, tgz.length),
    ]) {
      const error = await refusal(work);
      expect(error).toMatchObject({ kind: "too_large", code: "ARCHIVE_TOO_SLOW" });
      expect(error.message).toMatch(/could not be read and checked within the -?[\d.]+ seconds allowed/);
    }
    const zip = path.join(dir, "slow-source.zip");
    await writeFile(zip, await buildZip({ "a.txt": "a", "b.txt": "b" }));
    expect(await refusal(openZip(zip, spent))).toMatchObject({ code: "ARCHIVE_TOO_SLOW" });
    // Archives accepted before are read without a time bound.
    await (await openZip(zip, DEFAULT_ARCHIVE_LIMITS)).close();
  });
});

describe("limits", () => {
  it("come from the administrator's settings for uploads; stored archives are read at least as permissively", () => {
    expect(UPLOAD_ARCHIVE_LIMITS).toMatchObject({ maxEntries: 10_000, maxRatio: 100, maxSeconds: 2 });
    const tuned = uploadArchiveLimits({ archiveMaxEntries: 100_000, archiveMaxRatio: 1000, archiveMaxSeconds: 30 });
    expect(tuned).toMatchObject({ maxEntries: 100_000, maxRatio: 1000, maxSeconds: 30 });
    expect(DEFAULT_ARCHIVE_LIMITS.maxEntries).toBeGreaterThanOrEqual(tuned.maxEntries);
    expect(DEFAULT_ARCHIVE_LIMITS.maxRatio).toBeGreaterThanOrEqual(tuned.maxRatio);
    expect(DEFAULT_ARCHIVE_LIMITS.maxSeconds).toBe(Number.POSITIVE_INFINITY);
  });

  it("are read from WHARF_ARCHIVE_*, defaulting to the upload defaults", () => {
    expect(uploadArchiveLimits(loadConfig({}))).toEqual(UPLOAD_ARCHIVE_LIMITS);
    const config = loadConfig({
      WHARF_ARCHIVE_MAX_ENTRIES: "50000",
      WHARF_ARCHIVE_MAX_RATIO: "500",
      WHARF_ARCHIVE_MAX_SECONDS: "7.5",
    });
    expect(uploadArchiveLimits(config)).toMatchObject({ maxEntries: 50_000, maxRatio: 500, maxSeconds: 7.5 });
  });
});
