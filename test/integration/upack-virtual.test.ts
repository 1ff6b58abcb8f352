import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp } from "../helpers/app.js";
import { buildUpack, createUpackFixtures, readTgz, readZip, sha1Hex } from "../helpers/upack-fixtures.js";
import { expectText } from "../helpers/responses.js";
import { readOne } from "../helpers/fixtures.js";

/**
 * Virtual packages end to end (docs/compat.md 1.6, 2.4, 2.6, 2.10): uploaded as a ZIP or a plain
 * .vpack, assembled on download from packages of the same feed and from URLs, cached, assembled
 * again when a package of the feed changes, and refused cleanly (never a 500) when a reference
 * cannot be satisfied. URL sources come from a server on 127.0.0.1, which only
 * WHARF_FETCH_ALLOW_PRIVATE=true lets Wharf reach.
 */

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const TOOL = "#!/bin/sh\necho tool\n";

/** A clock that moves one second per reading: a second assembly would show in `assembled_at`. */
function tickingClock() {
  let tick = 0;
  return { now: () => new Date(Date.UTC(2024, 0, 1) + tick++ * 1000) };
}

let origin: Server;
let base: string;
const hits = new Map<string, number>();

beforeAll(async () => {
  origin = createServer((request, response) => {
    const url = request.url ?? "";
    hits.set(url, (hits.get(url) ?? 0) + 1);
    // Slow enough that concurrent first downloads overlap while one assembly waits on it.
    if (url === "/tool.sh") setTimeout(() => response.writeHead(200).end(TOOL), 150);
    else if (url === "/to-metadata") response.writeHead(302, { location: "http://169.254.169.254/latest" }).end();
    else response.writeHead(404).end("nope");
  });
  await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
});
afterAll(async () => new Promise((resolve) => origin.close(resolve)));

async function setUp(env: Record<string, string> = {}) {
  const t = await buildTestApp({ env, clock: tickingClock() });
  await createUpackFixtures(t).createFeed("main");
  const headers = { "x-apikey": t.adminKey };
  const put = async (bytes: Buffer, contentType = "application/zip") => {
    const res = await t.app.inject({
      method: "PUT",
      url: "/upack/main/upload",
      headers: { ...headers, "content-type": contentType },
      payload: bytes,
    });
    expect(res.statusCode, res.body).toBe(201);
  };
  const putVirtual = async (name: string, contents: unknown[]) =>
    put(await buildUpack({ name, version: "1.0.0", manifest: { contents }, files: {} }));
  const get = (url: string) => t.app.inject({ url, headers });
  const cacheRow = (name: string) =>
    readOne<{ blob_sha256: string; assembled_at: string }>(
      t.database,
      `SELECT a.blob_sha256, a.assembled_at FROM upack_assembled a JOIN upack_versions v ON v.id = a.version_id
         JOIN upack_packages p ON p.id = v.package_id WHERE p.name = ?`,
      name,
    );
  return { t, put, putVirtual, get, cacheRow };
}

describe("virtual packages built from packages of the same feed", () => {
  let s: Awaited<ReturnType<typeof setUp>>;
  let libB: Buffer;
  const libA = (text: string) => buildUpack({ name: "lib-a", version: "1.0.0", files: { "a.txt": text } });

  beforeAll(async () => {
    s = await setUp();
    libB = await buildUpack({ name: "lib-b", version: "1.0.0", files: { "b/b.txt": "B1", "shared.txt": "from b" } });
    await s.put(await libA("A1"));
    await s.put(libB);
    await s.putVirtual("bundle", [
      { source: "lib-a:1.0.0", virtualPath: "a" },
      "lib-b:1.0.0",
      {
        type: "virtualFile",
        virtualPath: "docs/a.txt",
        source: { name: "lib-a", version: "1.0.0", packagePath: "package/a.txt" },
      },
    ]);
    // The old spec's form: the manifest itself, as JSON; the reference pins lib-b's SHA-1.
    const vpack = { name: "pinned", version: "1.0.0", contents: [`lib-b:1.0.0:${sha1Hex(libB)}`] };
    await s.put(Buffer.from(JSON.stringify(vpack)), "application/octet-stream");
  });
  afterAll(async () => s?.t.close());

  it("downloads the assembled package, with the manifest minus contents", async () => {
    const res = await s.get("/upack/main/download/bundle/1.0.0");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers).toMatchObject({
      "content-type": "application/zip",
      "content-disposition": 'attachment; filename="bundle.1.0.0.upack"',
      etag: `"${sha256(res.rawPayload)}"`,
    });
    const entries = await readZip(res.rawPayload);
    expect(JSON.parse(entries.get("upack.json") ?? "")).toEqual({ name: "bundle", version: "1.0.0" });
    expect(entries.get("package/a/a.txt")).toBe("A1");
    expect(entries.get("package/b/b.txt")).toBe("B1");
    expect(entries.get("package/shared.txt")).toBe("from b");
    expect(entries.get("package/docs/a.txt")).toBe("A1");
    expect((await readZip((await s.get("/upack/main/download/pinned/1.0.0")).rawPayload)).get("package/b/b.txt")).toBe(
      "B1",
    );
  });

  it("serves later downloads from the cache without assembling again", async () => {
    const first = await s.cacheRow("bundle");
    expect(first).toBeDefined();
    const again = await s.get("/upack/main/download/bundle?latest");
    expect(sha256(again.rawPayload)).toBe(first?.blob_sha256);
    // Every assembly saves with a fresh reading of the ticking clock: an unchanged row means none ran.
    expect(await s.cacheRow("bundle")).toEqual(first);
  });

  it("serves contentOnly zip and tgz, single files and the feed's services from the assembled package", async () => {
    const zip = await readZip((await s.get("/upack/main/download/bundle/1.0.0?contentOnly=zip")).rawPayload);
    expect(zip.get("a/a.txt")).toBe("A1");
    expect(zip.has("upack.json")).toBe(false);
    const tgz = await readTgz((await s.get("/upack/main/download/bundle/1.0.0?contentOnly=tgz")).rawPayload);
    expect(tgz.get("docs/a.txt")).toBe("A1");
    expect((await s.get("/upack/main/download-file/bundle/1.0.0?path=package/b/b.txt")).body).toBe("B1");
    expect((await s.get("/upack/main/meta")).json()).toMatchObject({
      services: expect.arrayContaining(["VirtualPackages"]),
    });
  });

  it("download-vpack still answers the virtual manifest", async () => {
    const res = await s.get("/upack/main/download-vpack/bundle/1.0.0");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-disposition"]).toBe('attachment; filename="bundle.1.0.0.vpack"');
    expect(res.json()).toMatchObject({ name: "bundle", contents: expect.any(Array) });
  });

  it("assembles again once a referenced package is replaced", async () => {
    const before = await s.cacheRow("bundle");
    await s.put(await libA("A2"));
    expect(await s.cacheRow("bundle")).toBeUndefined();
    const entries = await readZip((await s.get("/upack/main/download/bundle/1.0.0")).rawPayload);
    expect(entries.get("package/a/a.txt")).toBe("A2");
    expect((await s.cacheRow("bundle"))?.blob_sha256).not.toBe(before?.blob_sha256);
  });

  it("refuses with a message, never a 500, what the feed cannot satisfy", async () => {
    await s.put(await buildUpack({ name: "lib-b", version: "1.0.0", files: { "b/b.txt": "B2" } }));
    expectText(await s.get("/upack/main/download/pinned/1.0.0"), 409, "contents[0]", "has SHA-1", sha1Hex(libB));
    await s.putVirtual("nested", ["bundle:1.0.0"]);
    expectText(await s.get("/upack/main/download/nested/1.0.0"), 409, "itself virtual");
    expect(
      (
        await s.t.app.inject({
          method: "DELETE",
          url: "/upack/main/delete/lib-a/1.0.0",
          headers: { "x-apikey": s.t.adminKey },
        })
      ).statusCode,
    ).toBe(200);
    expectText(await s.get("/upack/main/download/bundle/1.0.0"), 409, "lib-a:1.0.0 is not in this feed");
  });
});

describe("virtual packages with URL sources", () => {
  const contents = (path: string, hash?: string) => [
    { type: "virtualFile", virtualPath: "bin/tool.sh", source: { url: `${base}${path}`, ...(hash ? { hash } : {}) } },
  ];

  it("never fetch from loopback unless WHARF_FETCH_ALLOW_PRIVATE allows it, and say so", async () => {
    const s = await setUp();
    try {
      await s.putVirtual("remote", contents("/tool.sh"));
      const res = await s.get("/upack/main/download/remote/1.0.0");
      expectText(
        res,
        409,
        "Refused to fetch from 127.0.0.1",
        "loopback",
        "unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true",
      );
      expect(hits.get("/tool.sh") ?? 0).toBe(0);
    } finally {
      await s.t.close();
    }
  });

  describe("with WHARF_FETCH_ALLOW_PRIVATE=true", () => {
    let s: Awaited<ReturnType<typeof setUp>>;
    beforeAll(async () => {
      s = await setUp({ WHARF_FETCH_ALLOW_PRIVATE: "true" });
    });
    afterAll(async () => s?.t.close());

    it("fetches once for concurrent first downloads, then serves the cache", async () => {
      await s.putVirtual("remote", contents("/tool.sh", sha1Hex(Buffer.from(TOOL))));
      hits.clear();
      const downloads = await Promise.all([1, 2, 3, 4].map(() => s.get("/upack/main/download/remote/1.0.0")));
      const shas = new Set(
        downloads.map((res) => (expect(res.statusCode, res.body).toBe(200), sha256(res.rawPayload))),
      );
      expect(shas.size).toBe(1);
      expect((await readZip(downloads[0]?.rawPayload ?? Buffer.alloc(0))).get("package/bin/tool.sh")).toBe(TOOL);
      expect((await s.get("/upack/main/download/remote/1.0.0")).statusCode).toBe(200);
      expect(hits.get("/tool.sh")).toBe(1);
    });

    it("does not cache an assembly that a change in the feed overtook", async () => {
      await s.putVirtual("raced", contents("/tool.sh"));
      hits.clear();
      const download = s.get("/upack/main/download/raced/1.0.0");
      // The fetch is still waiting on the slow origin when the feed changes.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await s.put(await buildUpack({ name: "unrelated", version: "1.0.0" }));
      expect((await download).statusCode).toBe(200);
      expect(await s.cacheRow("raced")).toBeUndefined();
      expect((await s.get("/upack/main/download/raced/1.0.0")).statusCode).toBe(200);
      expect(await s.cacheRow("raced")).toBeDefined();
      expect(hits.get("/tool.sh")).toBe(2);
    });

    it("reports a hash mismatch, an upstream error and a redirect to a metadata address cleanly", async () => {
      await s.putVirtual("wrong-hash", contents("/tool.sh", "0".repeat(40)));
      expectText(await s.get("/upack/main/download/wrong-hash/1.0.0"), 502, "not 0000000000");
      await s.putVirtual("missing", contents("/missing"));
      expectText(await s.get("/upack/main/download/missing/1.0.0"), 502, "answered 404");
      await s.putVirtual("sneaky", contents("/to-metadata"));
      expectText(await s.get("/upack/main/download/sneaky/1.0.0"), 409, "redirect to 169.254.169.254", "never allowed");
    });
  });
});
