import http from "node:http";
import { brotliDecompressSync, gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { createFeedKey } from "../helpers/fixtures.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Response compression (http/compression.ts) over real sockets, with node:http, which sends no
 * Accept-Encoding unless told and decodes nothing: every header and byte is the server's own.
 */

interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly raw: Buffer;
  /** The body with its Content-Encoding undone. */
  readonly body: Buffer;
}

function decode(raw: Buffer, encoding: string | undefined): Buffer {
  if (encoding === undefined) return raw;
  if (encoding === "gzip") return gunzipSync(raw);
  if (encoding === "br") return brotliDecompressSync(raw);
  throw new Error(`unexpected Content-Encoding ${encoding}`);
}

const TEXT = Array.from({ length: 4000 }, (_, i) => `line ${i}: the quick brown fox jumps over the lazy dog\n`).join(
  "",
);
const KEY_HEADER = "x-apikey";

describe("response compression", () => {
  let t: TestApp;
  let base: URL;
  let packageBytes: Buffer;
  let readKey: string;

  function send(path: string, headers: Record<string, string> = {}, method = "GET"): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const request = http.request(new URL(path, base), { method, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const raw = Buffer.concat(chunks);
          const encoding = response.headers["content-encoding"];
          resolve({ status: response.statusCode ?? 0, headers: response.headers, raw, body: decode(raw, encoding) });
        });
        response.on("error", reject);
      });
      request.on("error", reject);
      request.end();
    });
  }
  const admin = (extra: Record<string, string> = {}) => ({ [KEY_HEADER]: t.adminKey, ...extra });

  beforeAll(async () => {
    t = await buildTestApp();
    const u = createUpackFixtures(t);
    await u.createFeed("main");
    // A listing well over the feed listing cache's 64 KiB floor (upack/read/response-cache.ts).
    const shared = await buildUpack({ name: "pkg", version: "1.0.0" });
    for (let i = 0; i < 250; i++) {
      await u.addVersion(
        "main",
        {
          name: `package-${i}`,
          version: "1.0.0",
          manifest: { description: `Package ${i} of the listing. ${"x".repeat(200)}` },
        },
        { bytes: shared },
      );
    }
    packageBytes = (await u.addVersion("main", { name: "lib", version: "2.0.0", files: { "a.txt": TEXT } })).bytes;
    readKey = await createFeedKey(t.database, "main", ["view"]);
    await createAssetDirectory(t, "files");
    base = new URL(await t.app.listen({ port: 0, host: "127.0.0.1" }));
  }, 60_000);
  afterAll(async () => t?.close());

  describe("negotiated by Accept-Encoding", () => {
    let identity: Answer;
    beforeAll(async () => {
      identity = await send("/openapi.json");
    });

    it("sends /openapi.json unencoded without Accept-Encoding, with its length and Vary", () => {
      expect(identity.status).toBe(200);
      expect(identity.headers["content-encoding"]).toBeUndefined();
      expect(identity.headers["content-length"]).toBe(String(identity.raw.length));
      expect(identity.headers.vary).toBe("Accept-Encoding");
      expect(JSON.parse(identity.body.toString()).openapi).toMatch(/^3\./);
    });

    it.each([
      ["gzip", "gzip"],
      ["br", "br"],
      ["gzip, deflate, br", "br"],
      ["br;q=0.5, gzip", "gzip"],
      ["*", "gzip"],
      ["br;q=0, gzip", "gzip"],
      ["deflate, GZIP;q=0.8", "gzip"],
    ])("Accept-Encoding %j gets %s, which decodes to the same bytes", async (accept, expected) => {
      const answer = await send("/openapi.json", { "accept-encoding": accept });
      expect(answer.status).toBe(200);
      expect(answer.headers["content-encoding"]).toBe(expected);
      expect(answer.headers.vary).toBe("Accept-Encoding");
      expect(answer.raw.length).toBeLessThan(identity.raw.length / 10);
      expect(answer.body.equals(identity.body)).toBe(true);
    });

    it.each(["identity", "gzip;q=0, br;q=0", "deflate", "compress, identity;q=0.5", "*;q=0"])(
      "Accept-Encoding %j gets the body unencoded",
      async (accept) => {
        const answer = await send("/openapi.json", { "accept-encoding": accept });
        expect(answer.headers["content-encoding"]).toBeUndefined();
        expect(answer.headers.vary).toBe("Accept-Encoding");
        expect(answer.raw.equals(identity.raw)).toBe(true);
      },
    );

    it("leaves bodies under the threshold unencoded", async () => {
      const answer = await send("/health", { "accept-encoding": "gzip, br" });
      expect(answer.status).toBe(200);
      expect(answer.raw.length).toBeLessThan(t.config.compression.minBytes);
      expect(answer.headers["content-encoding"]).toBeUndefined();
    });

    it("never decodes a request body sent with Content-Encoding", async () => {
      const json = JSON.stringify({ name: "gz-feed", feedType: "universal" });
      const answer = await new Promise<number>((resolve, reject) => {
        const request = http.request(
          new URL("/api/management/feeds/create", base),
          { method: "POST", headers: admin({ "content-type": "application/json", "content-encoding": "gzip" }) },
          (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          },
        );
        request.on("error", reject);
        request.end(gzipSync(json));
      });
      expect(answer).toBe(400); // gzip bytes are not JSON: nothing inflated them
      expect((await send("/api/management/feeds/get/gz-feed", admin())).status).toBe(404);
    });
  });

  describe("feed listings, kept in the listing cache", () => {
    const LISTING = "/upack/main/packages?count=1000";

    it("encodes each answer for its own request, never one variant for another", async () => {
      const order = ["br", undefined, "gzip", undefined, "br", "identity"];
      const answers: Answer[] = [];
      for (const accept of order) {
        answers.push(await send(LISTING, { [KEY_HEADER]: readKey, ...(accept ? { "accept-encoding": accept } : {}) }));
      }
      const plain = answers[1] as Answer;
      expect(plain.raw.length).toBeGreaterThan(64 * 1024);
      expect((JSON.parse(plain.body.toString()) as unknown[]).length).toBe(251);
      order.forEach((accept, i) => {
        const answer = answers[i] as Answer;
        expect(answer.status).toBe(200);
        expect(answer.headers["content-encoding"]).toBe(accept === "identity" ? undefined : accept);
        expect(answer.headers.vary).toContain("Accept-Encoding");
        expect(answer.body.equals(plain.body)).toBe(true);
      });
    });
  });

  describe("package downloads", () => {
    const DOWNLOAD = "/upack/main/download/lib/2.0.0";

    it("are sent as stored whatever the client accepts, with their length, also on replays", async () => {
      for (const accept of ["br", undefined, "gzip, br", "gzip", undefined, "*"]) {
        const answer = await send(DOWNLOAD, {
          [KEY_HEADER]: readKey,
          ...(accept ? { "accept-encoding": accept } : {}),
        });
        expect(answer.status).toBe(200);
        expect(answer.headers["content-encoding"]).toBeUndefined();
        expect(answer.headers.vary ?? "").not.toContain("Accept-Encoding");
        expect(answer.headers["content-length"]).toBe(String(packageBytes.length));
        expect(answer.raw.equals(packageBytes)).toBe(true);
      }
      const metrics = (await send("/metrics", admin())).body.toString();
      expect(metrics).toMatch(/wharf_http_replayed_responses_total\{[^}]*\} [1-9]/);
    });

    it("answer a Range unencoded, and HEAD with the stored length", async () => {
      const ranged = await send(DOWNLOAD, {
        [KEY_HEADER]: readKey,
        "accept-encoding": "gzip, br",
        range: "bytes=10-99",
      });
      expect(ranged.status).toBe(206);
      expect(ranged.headers["content-encoding"]).toBeUndefined();
      expect(ranged.headers["content-range"]).toBe(`bytes 10-99/${packageBytes.length}`);
      expect(ranged.raw.equals(packageBytes.subarray(10, 100))).toBe(true);
      const head = await send(DOWNLOAD, { [KEY_HEADER]: readKey, "accept-encoding": "br" }, "HEAD");
      expect(head.status).toBe(200);
      expect(head.headers["content-encoding"]).toBeUndefined();
      expect(head.headers["content-length"]).toBe(String(packageBytes.length));
    });

    it("as a contentOnly zip or tgz are not encoded either", async () => {
      for (const format of ["zip", "tgz"]) {
        const answer = await send(`${DOWNLOAD}?contentOnly=${format}`, {
          [KEY_HEADER]: readKey,
          "accept-encoding": "gzip, br",
        });
        expect(answer.status).toBe(200);
        expect(answer.headers["content-encoding"]).toBeUndefined();
      }
    });
  });

  describe("asset files", () => {
    const fileUrl = (path: string) => `/endpoints/files/content/${path}`;
    async function stored(path: string, body: Buffer | string, contentType?: string): Promise<void> {
      const res = await putAsset(t, "files", path, body, contentType ? { "content-type": contentType } : {});
      expect(res.statusCode).toBe(201);
    }
    const gzipped = gzipSync(TEXT);

    beforeAll(async () => {
      await stored("notes.txt", TEXT);
      await stored("big.log", TEXT.repeat(40), "text/plain"); // 2.3 MB: streamed from disk, not from memory
      await stored("data.json.gz", gzipped, "application/json");
      await stored("looks-like-text", gzipped, "text/plain");
      await stored("big-gzip-as-text", gzipSync(TEXT.repeat(40) + Math.random()), "text/plain");
      await stored("picture.png", Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), Buffer.alloc(5000, 7)]));
      await stored("bytes.bin", Buffer.alloc(5000, 65), "application/octet-stream");
      await stored("archive.tar", Buffer.alloc(5000, 0), "application/x-tar");
    });

    it.each(["notes.txt", "big.log"])("a text file (%s) is encoded, with a weak ETag", async (path) => {
      const plain = await send(fileUrl(path), admin());
      const encoded = await send(fileUrl(path), {
        ...admin(),
        "accept-encoding": "gzip, br",
      });
      expect(plain.headers["content-encoding"]).toBeUndefined();
      expect(plain.headers["content-length"]).toBe(String(plain.raw.length));
      expect(plain.headers.etag).toMatch(/^"[0-9a-f]{64}"$/);
      expect(plain.headers.vary).toMatch(/(^|, )Accept-Encoding(,|$)/);
      expect(encoded.headers.vary).toBe(plain.headers.vary);
      expect(encoded.headers["content-encoding"]).toBe("br");
      expect(encoded.headers.etag).toBe(`W/${plain.headers.etag}`);
      expect(encoded.raw.length).toBeLessThan(plain.raw.length / 5);
      expect(encoded.body.equals(plain.raw)).toBe(true);
      // The weak tag still validates a cached copy (weak comparison, RFC 9110 13.1.2).
      const revalidated = await send(fileUrl(path), {
        ...admin(),
        "accept-encoding": "gzip, br",
        "if-none-match": encoded.headers.etag as string,
      });
      expect(revalidated.status).toBe(304);
    });

    it("a Range of a text file is answered unencoded, and If-Range with the weak tag sends it whole", async () => {
      const plain = await send(fileUrl("notes.txt"), admin());
      const ranged = await send(fileUrl("notes.txt"), {
        ...admin(),
        "accept-encoding": "gzip, br",
        range: "bytes=0-99",
      });
      expect(ranged.status).toBe(206);
      expect(ranged.headers["content-encoding"]).toBeUndefined();
      expect(ranged.raw.equals(plain.raw.subarray(0, 100))).toBe(true);
      // Resuming an interrupted gzip download: the weak tag cannot match, so the whole file comes back.
      const weak = `W/${plain.headers.etag as string}`;
      const resumed = await send(fileUrl("notes.txt"), {
        ...admin(),
        range: "bytes=100-",
        "if-range": weak,
      });
      expect(resumed.status).toBe(200);
      expect(resumed.raw.equals(plain.raw)).toBe(true);
    });

    it.each([
      ["data.json.gz", "its name"],
      ["looks-like-text", "its first bytes, from memory"],
      ["big-gzip-as-text", "its first bytes, from disk"],
      ["picture.png", "its type"],
      ["bytes.bin", "its type (octet-stream)"],
      ["archive.tar", "its type (not a text type)"],
    ])("%s is sent as stored: %s says it is not worth encoding", async (path) => {
      const plain = await send(fileUrl(path), admin());
      const asked = await send(fileUrl(path), {
        ...admin(),
        "accept-encoding": "gzip, br",
      });
      expect(asked.status).toBe(200);
      expect(asked.headers["content-encoding"]).toBeUndefined();
      expect(asked.headers["content-length"]).toBe(String(plain.raw.length));
      expect(asked.headers.etag).toBe(plain.headers.etag);
      expect(asked.raw.equals(plain.raw)).toBe(true);
    });

    it("a folder exported as zip or tgz is not encoded", async () => {
      for (const format of ["zip", "tgz"]) {
        const answer = await send(`/endpoints/files/content/?format=${format}`, {
          ...admin(),
          "accept-encoding": "gzip, br",
        });
        expect(answer.status).toBe(200);
        expect(answer.headers["content-encoding"]).toBeUndefined();
      }
    });
  });
});
