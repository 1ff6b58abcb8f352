import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../../src/app.js";
import type { Clock } from "../../src/domain/clock.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { createFeedKey, readAll, readOne } from "../helpers/fixtures.js";
import { joinTestCluster, testsRunOnPostgres } from "../helpers/postgres-test-app.js";

const sha = (algorithm: string, data: Buffer) => createHash(algorithm).update(data).digest("hex");

/** pgutil's default part size is 5 MiB; a smaller one keeps the tests fast with the same shape. */
const PART_SIZE = 64 * 1024;

interface PartArgs {
  id: string;
  index: number;
  offset: number;
  totalSize: number;
  partSize: number;
  totalParts: number;
}

/** The query of a part as pgutil builds it, with any argument replaced or (undefined) left out. */
function partQuery(args: Partial<Record<keyof PartArgs, number | string | undefined>>): string {
  const query = new URLSearchParams({ multipart: "upload" });
  for (const [name, value] of Object.entries(args)) if (value !== undefined) query.set(name, String(value));
  return query.toString();
}

/** Splits a file the way pgutil does: fixed-size parts, the last one smaller, offset = index * part size. */
function splitIntoParts(id: string, file: Buffer, partSize = PART_SIZE) {
  const totalParts = Math.ceil(file.length / partSize);
  return Array.from({ length: totalParts }, (_, index) => {
    const body = file.subarray(index * partSize, Math.min(file.length, (index + 1) * partSize));
    const args: PartArgs = {
      id,
      index,
      offset: index * partSize,
      totalSize: file.length,
      partSize: body.length,
      totalParts,
    };
    return { args, body };
  });
}

function nth<T>(items: readonly T[], index: number): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no item at ${index}`);
  return item;
}

const newUploadId = () => randomBytes(16).toString("hex");

/**
 * Where the received parts of unfinished uploads are kept, as a count: on one machine the spool
 * files under the data directory (one per upload), in a cluster the part blobs' rows (one per part,
 * docs/cluster-mode.md "Multipart asset uploads").
 */
async function receivedParts(t: TestApp): Promise<number> {
  if (testsRunOnPostgres()) {
    const row = await readOne<{ n: number }>(t.database, "SELECT count(*) AS n FROM asset_multipart_part_blobs");
    return Number(row?.n);
  }
  return (await fs.readdir(path.join(t.dataDir, "multipart")).catch(() => [] as string[])).length;
}

const uploadKeysOf = async (t: TestApp) =>
  (
    await readAll<{ upload_key: string }>(
      t.database,
      "SELECT upload_key FROM asset_multipart_uploads ORDER BY upload_key",
    )
  ).map((row) => row.upload_key);

describe("multipart asset uploads (docs/compat.md 4.2)", () => {
  let t: TestApp;
  const admin = () => ({ "x-apikey": t.adminKey });

  const sendPart = (
    file: string,
    args: Partial<Record<keyof PartArgs, number | string | undefined>>,
    body: Buffer | undefined,
    headers: Record<string, string> = {},
  ) =>
    t.app.inject({
      method: "POST",
      url: `/endpoints/files/content/${file}?${partQuery(args)}`,
      headers: { ...admin(), ...headers },
      ...(body === undefined ? {} : { payload: body }),
    });

  const complete = (file: string, id: string, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: "POST",
      url: `/endpoints/files/content/${file}?multipart=complete&id=${id}`,
      headers: { ...admin(), ...headers },
    });

  const download = (file: string) =>
    t.app.inject({ method: "GET", url: `/endpoints/files/content/${file}`, headers: admin() });

  const uploadRows = async () => (await uploadKeysOf(t)).length;

  beforeAll(async () => {
    t = await buildTestApp();
    await createAssetDirectory(t, "files");
  });
  afterAll(async () => t.close());

  it("assembles a pgutil-style upload (5 parts, the last smaller) into the file", async () => {
    const file = randomBytes(4 * PART_SIZE + 1000);
    const id = newUploadId();
    const parts = splitIntoParts(id, file);
    expect(parts.map((p) => p.args.partSize)).toEqual([PART_SIZE, PART_SIZE, PART_SIZE, PART_SIZE, 1000]);
    for (const { args, body } of parts) {
      const res = await sendPart("big/archive.bin", args, body);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body).toBe("");
    }
    expect(await receivedParts(t)).toBe(testsRunOnPostgres() ? parts.length : 1);

    const done = await complete("big/archive.bin", id);
    expect(done.statusCode, done.body).toBe(200);
    expect(done.headers["content-type"]).toMatch(/^application\/json/);
    expect(done.json()).toMatchObject({
      name: "archive.bin",
      parent: "big",
      type: "application/octet-stream",
      size: file.length,
      md5: sha("md5", file),
      sha1: sha("sha1", file),
      sha256: sha("sha256", file),
      sha512: sha("sha512", file),
    });

    const res = await download("big/archive.bin");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-length"]).toBe(String(file.length));
    expect(res.rawPayload.equals(file)).toBe(true);
    // The upload is gone once completed.
    expect(await uploadRows()).toBe(0);
    expect(await receivedParts(t)).toBe(0);
    expect((await complete("big/archive.bin", id)).statusCode).toBe(404);
  });

  it("keeps the file invisible until the upload is completed", async () => {
    const file = randomBytes(2 * PART_SIZE);
    const id = newUploadId();
    const parts = splitIntoParts(id, file);
    for (const { args, body } of parts) expect((await sendPart("hidden/secret.bin", args, body)).statusCode).toBe(200);

    expect((await download("hidden/secret.bin")).statusCode).toBe(404);
    const listing = await t.app.inject({
      method: "GET",
      url: "/endpoints/files/dir/?recursive=true",
      headers: admin(),
    });
    expect(listing.statusCode).toBe(200);
    expect(listing.json().map((item: { name: string }) => item.name)).not.toContain("secret.bin");
    expect(listing.json().map((item: { name: string }) => item.name)).not.toContain("hidden");

    expect((await complete("hidden/secret.bin", id)).statusCode).toBe(200);
    expect((await download("hidden/secret.bin")).rawPayload.equals(file)).toBe(true);
  });

  it("accepts parts out of order and concurrently", async () => {
    const file = randomBytes(5 * PART_SIZE - 7);
    const id = newUploadId();
    const parts = splitIntoParts(id, file);
    for (const index of [3, 1])
      expect((await sendPart("any-order.bin", nth(parts, index).args, nth(parts, index).body)).statusCode).toBe(200);
    const rest = await Promise.all(
      [4, 0, 2].map((index) => sendPart("any-order.bin", nth(parts, index).args, nth(parts, index).body)),
    );
    expect(rest.map((res) => res.statusCode)).toEqual([200, 200, 200]);

    expect((await complete("any-order.bin", id)).statusCode).toBe(200);
    expect((await download("any-order.bin")).rawPayload.equals(file)).toBe(true);
  });

  it("replaces a part that is sent again with the same index, offset and size (a client retry)", async () => {
    const file = randomBytes(3 * PART_SIZE);
    const id = newUploadId();
    const parts = splitIntoParts(id, file);
    for (const { args, body } of parts) expect((await sendPart("retried.bin", args, body)).statusCode).toBe(200);
    // The first attempt of part 1 carried wrong bytes; the retry's bytes win.
    expect((await sendPart("retried.bin", nth(parts, 1).args, randomBytes(PART_SIZE))).statusCode).toBe(200);
    expect((await sendPart("retried.bin", nth(parts, 1).args, nth(parts, 1).body)).statusCode).toBe(200);

    expect((await complete("retried.bin", id)).statusCode).toBe(200);
    expect((await download("retried.bin")).rawPayload.equals(file)).toBe(true);
  });

  it("follows ProGetAutomation: an empty POST with the type, the parts, then complete without a type", async () => {
    const file = randomBytes(2 * PART_SIZE + 10);
    const guid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    const announced = await putAsset(t, "files", "pga/report.dat", "", { "content-type": "application/x-report" });
    expect(announced.statusCode).toBe(201);
    for (const { args, body } of splitIntoParts(guid, file)) {
      expect(
        (await sendPart("pga/report.dat", args, body, { "content-type": "application/octet-stream" })).statusCode,
      ).toBe(200);
    }
    // Until completion the announced empty file is what is served.
    expect((await download("pga/report.dat")).body).toBe("");

    const done = await complete("pga/report.dat", guid);
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ type: "application/x-report", size: file.length, sha256: sha("sha256", file) });
    const res = await download("pga/report.dat");
    expect(res.headers["content-type"]).toBe("application/x-report");
    expect(res.rawPayload.equals(file)).toBe(true);
  });

  it("stores the Content-Type sent with complete", async () => {
    const file = randomBytes(100);
    const id = newUploadId();
    for (const { args, body } of splitIntoParts(id, file, 40))
      expect((await sendPart("typed.dat", args, body)).statusCode).toBe(200);
    const done = await complete("typed.dat", id, { "content-type": "text/csv" });
    expect(done.statusCode).toBe(200);
    expect(done.json()).toMatchObject({ type: "text/csv", size: 100 });
  });

  it("assembles an empty file from one empty part", async () => {
    const id = newUploadId();
    const args = { id, index: 0, offset: 0, totalSize: 0, partSize: 0, totalParts: 1 };
    expect((await sendPart("empty.txt", args, undefined)).statusCode).toBe(200);
    const done = await complete("empty.txt", id);
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ size: 0, sha256: sha("sha256", Buffer.alloc(0)) });
  });

  describe("refuses bad parts with 400 and stores nothing", () => {
    const valid = (id: string): PartArgs => ({ id, index: 0, offset: 0, totalSize: 10, partSize: 10, totalParts: 1 });

    const expectRefused = async (
      res: Awaited<ReturnType<typeof sendPart>>,
      code: string,
      message: RegExp,
      status = 400,
    ) => {
      expect(res.statusCode, res.body).toBe(status);
      expect(res.headers["content-type"]).toBe("text/plain");
      expect(res.headers["x-wharf-error"]).toBe(code);
      expect(res.body).toMatch(message);
    };

    it.each(["id", "index", "offset", "totalSize", "partSize", "totalParts"] as const)(
      "a missing '%s'",
      async (name) => {
        const res = await sendPart("bad.bin", { ...valid(newUploadId()), [name]: undefined }, randomBytes(10));
        await expectRefused(res, "MULTIPART_ARGUMENT_MISSING", new RegExp(`'${name}' is required`));
      },
    );

    it.each([
      ["index", "-1"],
      ["offset", "1.5"],
      ["totalSize", "ten"],
      ["partSize", "99999999999999999"],
      ["totalParts", "0x1"],
    ] as const)("an invalid %s (%s)", async (name, value) => {
      const res = await sendPart("bad.bin", { ...valid(newUploadId()), [name]: value }, randomBytes(10));
      await expectRefused(res, "INVALID_MULTIPART_ARGUMENT", new RegExp(`'${name}' must be a whole number`));
    });

    it.each(["a b", "x".repeat(101), "../etc", "id;drop"])("an invalid id (%s)", async (id) => {
      await expectRefused(await sendPart("bad.bin", valid(id), randomBytes(10)), "INVALID_MULTIPART_ID", /'id'/);
    });

    it("an index out of range", async () => {
      const res = await sendPart("bad.bin", { ...valid(newUploadId()), index: 1 }, randomBytes(10));
      await expectRefused(res, "MULTIPART_INDEX_OUT_OF_RANGE", /index 1 is out of range: totalParts is 1/);
    });

    it("offset + partSize beyond totalSize", async () => {
      const args = { ...valid(newUploadId()), offset: 5, partSize: 6, totalParts: 2, index: 1 };
      await expectRefused(
        await sendPart("bad.bin", args, randomBytes(6)),
        "MULTIPART_RANGE_OUT_OF_FILE",
        /ends past totalSize \(10 bytes\)/,
      );
    });

    it("a body shorter or longer than partSize", async () => {
      const short = await sendPart("bad.bin", valid(newUploadId()), randomBytes(9));
      await expectRefused(short, "MULTIPART_PART_TOO_SHORT", /has 9 bytes, but partSize is 10/);
      const none = await sendPart("bad.bin", valid(newUploadId()), undefined);
      await expectRefused(none, "MULTIPART_PART_TOO_SHORT", /has 0 bytes/);
      const long = await sendPart("bad.bin", valid(newUploadId()), randomBytes(11));
      await expectRefused(long, "MULTIPART_PART_TOO_LONG", /longer than its partSize \(10 bytes\)/);
      expect(await uploadRows()).toBe(0);
      expect(await receivedParts(t)).toBe(0);
    });

    it("a part overlapping another, a later part disagreeing with the first, a different path", async () => {
      const id = newUploadId();
      const first = { id, index: 0, offset: 0, totalSize: 30, partSize: 10, totalParts: 3 };
      expect((await sendPart("shared.bin", first, randomBytes(10))).statusCode).toBe(200);

      const overlapping = await sendPart("shared.bin", { ...first, index: 1, offset: 5 }, randomBytes(10));
      await expectRefused(overlapping, "MULTIPART_OVERLAP", /Part 1 \(bytes 5-14\) overlaps part 0 \(bytes 0-9\)/);
      const moved = await sendPart("shared.bin", { ...first, offset: 10 }, randomBytes(10));
      await expectRefused(moved, "MULTIPART_PART_CHANGED", /a retry must repeat them/);
      const resized = await sendPart("shared.bin", { ...first, index: 1, offset: 10, totalSize: 40 }, randomBytes(10));
      await expectRefused(resized, "MULTIPART_MISMATCH", /totalSize 40 .* started with totalSize 30/);
      const reparted = await sendPart("shared.bin", { ...first, index: 1, offset: 10, totalParts: 4 }, randomBytes(10));
      await expectRefused(reparted, "MULTIPART_MISMATCH", /totalParts 4/);
      const elsewhere = await sendPart("other.bin", { ...first, index: 1, offset: 10 }, randomBytes(10));
      await expectRefused(elsewhere, "MULTIPART_PATH_MISMATCH", /is for 'shared.bin', not 'other.bin'/);

      // None of the refusals disturbed the upload: it still has exactly part 0.
      const parts = await readAll<{ part_index: number }>(
        t.database,
        `SELECT part_index FROM asset_multipart_parts JOIN asset_multipart_uploads u ON u.id = upload_id
          WHERE u.upload_key = ?`,
        id,
      );
      expect(parts.map((part) => Number(part.part_index))).toEqual([0]);
    });

    it("completing with a missing part, on another path, or an unknown id", async () => {
      const file = randomBytes(30);
      const id = newUploadId();
      const parts = splitIntoParts(id, file, 10);
      for (const index of [0, 2])
        expect((await sendPart("gappy.bin", nth(parts, index).args, nth(parts, index).body)).statusCode).toBe(200);

      await expectRefused(
        await complete("gappy.bin", id),
        "MULTIPART_INCOMPLETE",
        new RegExp(`'${id}' lacks part 1 of 3`),
      );
      await expectRefused(await complete("elsewhere.bin", id), "MULTIPART_PATH_MISMATCH", /is for 'gappy.bin'/);
      await expectRefused(
        await complete("gappy.bin", "nope"),
        "MULTIPART_UPLOAD_NOT_FOUND",
        /'nope' was not found in this asset directory \(unfinished uploads are removed after WHARF_MULTIPART_MAX_AGE_HOURS\)/,
        404,
      );
      await expectRefused(await complete("gappy.bin", ""), "MULTIPART_ARGUMENT_MISSING", /'id' is required/);
      expect((await download("gappy.bin")).statusCode).toBe(404);

      // The refused completion kept the upload: the missing part completes it.
      expect((await sendPart("gappy.bin", nth(parts, 1).args, nth(parts, 1).body)).statusCode).toBe(200);
      expect((await complete("gappy.bin", id)).statusCode).toBe(200);
      expect((await download("gappy.bin")).rawPayload.equals(file)).toBe(true);
    });

    it("multipart with another method than POST", async () => {
      const res = await t.app.inject({
        method: "PUT",
        url: `/endpoints/files/content/put.bin?${partQuery(valid(newUploadId()))}`,
        headers: admin(),
        payload: randomBytes(10),
      });
      await expectRefused(res, "MULTIPART_NEEDS_POST", /POST/);
    });
  });

  it("survives rebuilding the app on the same data directory (in a cluster: another node finishes it)", async () => {
    const file = randomBytes(3 * PART_SIZE);
    const id = newUploadId();
    const parts = splitIntoParts(id, file);
    for (const { args, body } of parts.slice(0, 2))
      expect((await sendPart("durable.bin", args, body)).statusCode).toBe(200);

    const node = testsRunOnPostgres() ? await joinTestCluster(t.config) : undefined;
    const rebuilt = await buildApp(t.config, {
      db: node?.db ?? t.db,
      ...(node && { node: node.node }),
      blobs: createFileBlobStore(t.dataDir),
      logger: false,
    });
    try {
      await rebuilt.ready();
      const last = nth(parts, 2);
      const query = partQuery(last.args);
      const sent = await rebuilt.inject({
        method: "POST",
        url: `/endpoints/files/content/durable.bin?${query}`,
        headers: admin(),
        payload: last.body,
      });
      expect(sent.statusCode).toBe(200);
      const done = await rebuilt.inject({
        method: "POST",
        url: `/endpoints/files/content/durable.bin?multipart=complete&id=${id}`,
        headers: admin(),
      });
      expect(done.statusCode, done.body).toBe(200);
    } finally {
      await rebuilt.close();
      await node?.close();
    }
    expect((await download("durable.bin")).rawPayload.equals(file)).toBe(true);
  });
});

describe("multipart uploads: limits, permissions and clean-up", () => {
  it("refuses a totalSize over the upload limit with 413", async () => {
    const t = await buildTestApp({ env: { WHARF_MAX_UPLOAD_BYTES: "1000" } });
    try {
      await createAssetDirectory(t, "small");
      const query = partQuery({
        id: newUploadId(),
        index: 0,
        offset: 0,
        totalSize: 1001,
        partSize: 500,
        totalParts: 3,
      });
      const res = await t.app.inject({
        method: "POST",
        url: `/endpoints/small/content/big.bin?${query}`,
        headers: { "x-apikey": t.adminKey },
        payload: randomBytes(500),
      });
      expect(res.statusCode).toBe(413);
      expect(res.headers["x-wharf-error"]).toBe("UPLOAD_TOO_LARGE");
      expect(res.body).toMatch(/totalSize 1001 bytes\) exceeds the limit of 1000 bytes/);
    } finally {
      await t.close();
    }
  });

  it("needs the overwrite permission to complete over an existing file", async () => {
    const t = await buildTestApp();
    try {
      await createAssetDirectory(t, "dir");
      expect((await putAsset(t, "dir", "existing.bin", "old content")).statusCode).toBe(201);
      const file = randomBytes(50);
      const upload = async (key: string) => {
        const id = newUploadId();
        for (const { args, body } of splitIntoParts(id, file, 20)) {
          const res = await t.app.inject({
            method: "POST",
            url: `/endpoints/dir/content/existing.bin?${partQuery(args)}`,
            headers: { "x-apikey": key },
            payload: body,
          });
          expect(res.statusCode).toBe(200);
        }
        return t.app.inject({
          method: "POST",
          url: `/endpoints/dir/content/existing.bin?multipart=complete&id=${id}`,
          headers: { "x-apikey": key },
        });
      };

      const adder = await createFeedKey(t.database, "dir", ["view", "add"]);
      const refused = await upload(adder);
      expect(refused.statusCode).toBe(403);
      expect(refused.headers["x-wharf-error"]).toBe("OVERWRITE_FORBIDDEN");
      const unchanged = await t.app.inject({
        url: "/endpoints/dir/content/existing.bin",
        headers: { "x-apikey": adder },
      });
      expect(unchanged.body).toBe("old content");

      // ProGetAutomation's empty placeholder holds nothing to lose: an add-only key may fill it.
      const announced = await t.app.inject({
        method: "POST",
        url: "/endpoints/dir/content/placeholder.bin",
        headers: { "x-apikey": adder, "content-type": "application/x-thing" },
      });
      expect(announced.statusCode).toBe(201);
      const id = newUploadId();
      for (const { args, body } of splitIntoParts(id, file, 20)) {
        const res = await t.app.inject({
          method: "POST",
          url: `/endpoints/dir/content/placeholder.bin?${partQuery(args)}`,
          headers: { "x-apikey": adder },
          payload: body,
        });
        expect(res.statusCode).toBe(200);
      }
      const filled = await t.app.inject({
        method: "POST",
        url: `/endpoints/dir/content/placeholder.bin?multipart=complete&id=${id}`,
        headers: { "x-apikey": adder },
      });
      expect(filled.statusCode, filled.body).toBe(200);
      expect(filled.json()).toMatchObject({ size: 50, type: "application/x-thing" });
      // ...but once it has content, replacing it needs the overwrite permission again.
      const overwrite = await t.app.inject({
        method: "POST",
        url: "/endpoints/dir/content/placeholder.bin",
        headers: { "x-apikey": adder },
        payload: "other",
      });
      expect(overwrite.statusCode).toBe(403);

      const replacer = await createFeedKey(t.database, "dir", ["view", "add", "delete"]);
      const replaced = await upload(replacer);
      expect(replaced.statusCode, replaced.body).toBe(200);
      expect(replaced.json()).toMatchObject({ size: 50, sha256: sha("sha256", file) });
    } finally {
      await t.close();
    }
  });

  it("removes abandoned uploads, orphaned spool files and uploads of deleted directories", async () => {
    let now = new Date("2030-01-01T00:00:00.000Z");
    const clock: Clock = { now: () => now };
    // 0.001 hours: the sweep runs every second in this app.
    const t = await buildTestApp({ clock, env: { WHARF_MULTIPART_MAX_AGE_HOURS: "0.001" } });
    const maxAgeMs = 3_600;
    try {
      await createAssetDirectory(t, "sweep");
      await createAssetDirectory(t, "doomed");
      const spoolDir = path.join(t.dataDir, "multipart");
      const partOf = (dir: string, id: string) =>
        t.app.inject({
          method: "POST",
          url: `/endpoints/${dir}/content/f.bin?${partQuery({ id, index: 0, offset: 0, totalSize: 20, partSize: 10, totalParts: 2 })}`,
          headers: { "x-apikey": t.adminKey },
          payload: randomBytes(10),
        });
      // Spool files are one machine's (SQLite); a cluster keeps the parts as blobs (receivedParts).
      const spooling = !testsRunOnPostgres();

      expect((await partOf("sweep", "abandoned")).statusCode).toBe(200);
      expect((await partOf("doomed", "orphaned")).statusCode).toBe(200);
      const abandonedSpool = await readOne<{ spool: string }>(
        t.database,
        "SELECT spool FROM asset_multipart_uploads WHERE upload_key = 'abandoned'",
      );
      // Deleting the directory cascades its upload's rows; its spool is left for the sweep.
      const deleted = await t.app.inject({
        method: "POST",
        url: "/api/management/feeds/delete/doomed",
        headers: { "x-apikey": t.adminKey },
      });
      expect(deleted.statusCode).toBe(200);
      expect(await uploadKeysOf(t)).toEqual(["abandoned"]);
      const stray = path.join(spoolDir, "not-a-spool.txt");
      if (spooling) await fs.writeFile(stray, "left alone");

      now = new Date(now.getTime() + maxAgeMs + 60_000);
      expect((await partOf("sweep", "fresh")).statusCode).toBe(200);
      await vi.waitFor(
        async () => {
          expect(await uploadKeysOf(t)).toEqual(["fresh"]);
          if (spooling)
            expect(await fs.readdir(spoolDir)).toHaveLength(2); // the fresh upload's spool and the stray
          else expect(await receivedParts(t)).toBe(1); // the fresh upload's one part
        },
        { timeout: 5_000, interval: 100 },
      );
      if (spooling) {
        expect(await fs.readdir(spoolDir)).not.toContain(abandonedSpool?.spool);
        expect(await fs.readFile(stray, "utf8")).toBe("left alone");
      }

      const gone = await t.app.inject({
        method: "POST",
        url: "/endpoints/sweep/content/f.bin?multipart=complete&id=abandoned",
        headers: { "x-apikey": t.adminKey },
      });
      expect(gone.statusCode).toBe(404);
    } finally {
      await t.close();
    }
  });
});
