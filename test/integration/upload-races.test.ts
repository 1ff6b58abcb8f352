import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { buildUpack, createUpackFixtures, storedBlobAddresses } from "../helpers/upack-fixtures.js";

/**
 * Concurrent uploads of the same bytes share one content-addressed blob (issue 11 section 7): an
 * upload that is refused after its bytes were stored deletes the blob unless something else uses
 * it. Each upload must get the answer its own request deserves, never a 503 because another
 * upload of the same bytes was refused at the same moment.
 */

let t: TestApp;
let admin: Record<string, string>;
const FEEDS = 8;

beforeAll(async () => {
  t = await buildTestApp();
  admin = { "x-apikey": t.adminKey };
  const fixtures = createUpackFixtures(t);
  for (let i = 0; i < FEEDS; i++) await fixtures.createFeed(`race${i}`);
  await fixtures.createFeed("assets", "asset");
});
afterAll(async () => t.close());

function upload(feed: string, body: Buffer, headers: Record<string, string> = {}, query = "") {
  return t.app.inject({
    method: "PUT",
    url: `/upack/${feed}/upload${query}`,
    headers: { ...admin, "content-type": "application/zip", ...headers },
    payload: body,
  });
}

const storedBlobs = () => storedBlobAddresses(t);

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("concurrent uploads of the same bytes", () => {
  it("refuses every one of eight identical invalid uploads with 400, never 503, and keeps no blob", async () => {
    for (let round = 0; round < 6; round++) {
      const bytes = Buffer.concat([Buffer.from("PK\x03\x04", "latin1"), randomBytes(200)]);
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => upload(`race${i}`, bytes)));
      for (const res of answers) {
        expect(res.statusCode, `round ${round}: ${res.statusCode} ${res.body}`).toBe(400);
        expect(res.headers["x-wharf-error"]).toBe("ARCHIVE_INVALID");
      }
      // A cluster node deletes no blob eagerly (another node may be storing the same bytes): the
      // refused uploads' blob is left to garbage collection there (docs/cluster-mode.md, Blobs).
      if (!testsRunOnPostgres()) expect(await storedBlobs()).not.toContain(sha256(bytes));
    }
  });

  it("stores eight identical valid uploads into eight feeds, all 201", async () => {
    for (let round = 0; round < 3; round++) {
      const bytes = await buildUpack({ name: "same", version: `1.0.${round}`, files: { "a.txt": "A" } });
      const answers = await Promise.all(Array.from({ length: FEEDS }, (_, i) => upload(`race${i}`, bytes)));
      for (const res of answers) expect(res.statusCode, res.body).toBe(201);
      expect(await storedBlobs()).toContain(sha256(bytes));
    }
  });

  it("answers each upload by its own request when some of the same bytes are refused for other reasons", async () => {
    for (let round = 0; round < 4; round++) {
      const bytes = await buildUpack({ name: "mixed", version: `2.0.${round}`, files: { "b.txt": "B" } });
      const answers = await Promise.all(
        Array.from({ length: FEEDS }, (_, i) => {
          const feed = `race${i}`;
          // Refused after the bytes were stored and read: the request names another package.
          if (i % 4 === 1) return upload(feed, bytes, {}, "?name=someone-else");
          // Refused while storing: the claimed digest is not the content's.
          if (i % 4 === 3) return upload(feed, bytes, { "x-checksum-sha256": "0".repeat(64) });
          return upload(feed, bytes);
        }),
      );
      answers.forEach((res, i) => {
        const expected =
          i % 4 === 1 ? [400, "PACKAGE_IDENTITY_MISMATCH"] : i % 4 === 3 ? [400, "DIGEST_MISMATCH"] : [201];
        expect(res.statusCode, `round ${round}, upload ${i}: ${res.body}`).toBe(expected[0]);
        if (expected[1] !== undefined) expect(res.headers["x-wharf-error"]).toBe(expected[1]);
      });
      const listed = await t.app.inject({ url: `/upack/race0/versions?name=mixed`, headers: admin });
      expect(listed.json()).toHaveLength(round + 1);
      expect(await storedBlobs()).toContain(sha256(bytes));
    }
  });

  it("refuses identical asset uploads with a wrong digest while the right ones are stored", async () => {
    for (let round = 0; round < 4; round++) {
      const bytes = randomBytes(300);
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          t.app.inject({
            method: "PUT",
            url: `/endpoints/assets/content/r${round}/f${i}.bin`,
            headers: { ...admin, ...(i % 2 === 1 ? { "x-checksum-sha256": "0".repeat(64) } : {}) },
            payload: bytes,
          }),
        ),
      );
      answers.forEach((res, i) => expect(res.statusCode, `${i}: ${res.body}`).toBe(i % 2 === 1 ? 400 : 201));
      expect(await storedBlobs()).toContain(sha256(bytes));
    }
  });
});
