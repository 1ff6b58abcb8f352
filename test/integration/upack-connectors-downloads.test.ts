import { createHash, randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type Downstream,
  expectError,
  type FakeUpstream,
  okJson,
  sendJson,
  startDownstream,
  startFakeUpstream,
  startUpstreamWharf,
  type UpstreamWharf,
} from "../helpers/connector-fixtures.js";
import { createFeedKey, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { buildUpack, readZip, sha1Hex } from "../helpers/upack-fixtures.js";

/**
 * Downloads from a universal feed with connectors (docs/compat.md 2.4, 2.5, 5.3): a remote version is
 * streamed from the upstream and, when the feed caches connectors and the caller may pull, kept
 * as a cached version (verified against the upstream's sha1) that is then served locally. An
 * upstream lying about sha1, or sending a file whose upack.json names another package or version,
 * gets its file refused, never kept.
 */

interface VersionJson {
  version: string;
  sha1: string;
  isLocal: boolean;
  isCached: boolean;
}

const cachedRow = (down: Downstream, name: string, version: string) =>
  readOne<{ isCached: number; sha1: string }>(
    down.t.database,
    `SELECT v.is_cached AS "isCached", v.sha1 FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
     JOIN feeds f ON f.id = p.feed_id WHERE f.name = 'proxy' AND p.name_key = ? AND v.version_key = ?`,
    name,
    version,
  );

/**
 * Waits until the downstream's store no longer holds these bytes, on the disk store: a cluster
 * node deletes no blob eagerly (another node may be storing the same bytes) and leaves them to
 * garbage collection (docs/cluster-mode.md, Blobs).
 */
async function expectDeletedAtOnce(down: Downstream, sha256: string): Promise<void> {
  if (testsRunOnPostgres()) return;
  await vi.waitFor(async () => expect(await down.upack.blobs.stat(sha256)).toBeUndefined(), {
    timeout: 5_000,
    interval: 20,
  });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a universal feed with a connector to another Wharf: downloads", () => {
  let up: UpstreamWharf;
  let down: Downstream;
  const remote: Record<string, { bytes: Buffer; sha1: string }> = {};

  beforeAll(async () => {
    up = await startUpstreamWharf();
    for (const [group, name, version] of [
      ["acme", "tool", "1.0.0"],
      ["acme", "tool", "1.1.0"],
      ["", "viewer-pkg", "1.0.0"],
      ["", "files-pkg", "1.0.0"],
      ["", "zip-pkg", "1.0.0"],
      ["", "shared", "2.0.0"],
      ["", "uncached", "1.0.0"],
    ] as const) {
      const added = await up.upack.addVersion("remote", {
        group,
        name,
        version,
        files: { "readme.txt": `${name} ${version} from upstream`, "bin/tool.sh": "#!/bin/sh\n" },
      });
      remote[`${name}@${version}`] = added;
    }
    // Assembled by the upstream on download: its upack.json is the virtual package's own.
    await up.upack.addVersion("remote", {
      name: "bundle",
      version: "1.0.0",
      manifest: { contents: ["files-pkg:1.0.0"] },
      files: {},
    });
    down = await startDownstream({
      // Merges into the feed's own `shared` (shadowing: upack-connectors-shadowing.test.ts).
      connectors: [{ name: "up", url: up.feedUrl, ...up.credentials, mergeWithLocalPackages: true }],
      feeds: { proxy: {}, nocache: { cacheConnectors: false } },
    });
    await down.upack.addVersion("proxy", { name: "shared", version: "1.5.0" });
  });
  afterAll(async () => {
    await down?.close();
    await up?.close();
  });

  it("streams a remote version, keeps it (isCached), then serves it locally", async () => {
    const expected = remote["tool@1.1.0"];
    const res = await down.get("/upack/proxy/download/acme/tool/1.1.0");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("application/zip");
    expect(res.headers["content-disposition"]).toContain("tool.1.1.0.upack");
    expect(res.rawPayload.equals(expected?.bytes ?? Buffer.alloc(0))).toBe(true);
    // Kept in the background once the upstream's last byte is in and the sha1 matched.
    await vi.waitFor(
      async () => expect(await cachedRow(down, "tool", "1.1.0")).toEqual({ isCached: 1, sha1: expected?.sha1 }),
      {
        timeout: 5_000,
        interval: 20,
      },
    );
    const listed = okJson<VersionJson>(await down.get("/upack/proxy/versions?group=acme&name=tool&version=1.1.0"));
    expect(listed).toMatchObject({ isLocal: false, isCached: true, sha1: expected?.sha1 });
    const again = await down.get("/upack/proxy/download/acme/tool/1.1.0");
    expect(again.statusCode).toBe(200);
    expect(again.headers.etag).toBeDefined(); // the local path (sendBlob), not the upstream
    expect(again.rawPayload.equals(expected?.bytes ?? Buffer.alloc(0))).toBe(true);
    // Listings now show the cached version as the feed's own entry, and the other one as remote.
    const versions = okJson<VersionJson[]>(await down.get("/upack/proxy/versions?group=acme&name=tool"));
    expect(versions.map((v) => [v.version, v.isLocal, v.isCached])).toEqual([
      ["1.1.0", false, true],
      ["1.0.0", false, false],
    ]);
  });

  it("does not keep what a caller without Feeds_PullPackage downloads (a view key), nor on a feed that does not cache", async () => {
    const viewer = { "x-apikey": await createFeedKey(down.t.database, "proxy", ["view"]) };
    const res = await down.get("/upack/proxy/download/viewer-pkg/1.0.0", viewer);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(remote["viewer-pkg@1.0.0"]?.bytes ?? Buffer.alloc(0))).toBe(true);
    const uncached = await down.get("/upack/nocache/download/uncached/1.0.0");
    expect(uncached.statusCode).toBe(200);
    await pause(200);
    expect(await cachedRow(down, "viewer-pkg", "1.0.0")).toBeUndefined();
    const anyUncached = await readOne<{ n: number }>(
      down.t.database,
      "SELECT count(*) AS n FROM upack_packages p JOIN feeds f ON f.id = p.feed_id WHERE f.name = 'nocache'",
    );
    expect(anyUncached?.n).toBe(0);
    // A key with `add` has Feeds_PullPackage: its download is kept.
    const puller = { "x-apikey": await createFeedKey(down.t.database, "proxy", ["view", "add"]) };
    expect((await down.get("/upack/proxy/download/viewer-pkg/1.0.0", puller)).statusCode).toBe(200);
    await vi.waitFor(async () => expect((await cachedRow(down, "viewer-pkg", "1.0.0"))?.isCached).toBe(1), {
      timeout: 5_000,
      interval: 20,
    });
  });

  it("records the deployment a remote download announces in X-ProGet-Deployment-* headers", async () => {
    const admin = { "x-apikey": down.t.adminKey };
    const res = await down.get("/upack/proxy/download/viewer-pkg/1.0.0", {
      ...admin,
      "x-proget-deployment-application": "Ansible",
      "x-proget-deployment-description": "nightly",
      "x-proget-deployment-target": "web-01",
    });
    expect(res.statusCode).toBe(200);
    const records = await down.get("/api/package-deployment/?feed=proxy&name=viewer-pkg", admin);
    expect(records.statusCode).toBe(200);
    expect(records.json()).toEqual([
      expect.objectContaining({
        packageName: "viewer-pkg",
        version: "1.0.0",
        application: "Ansible",
        target: "web-01",
      }),
    ]);
  });

  it("?latest takes the highest version of the feed and its connectors", async () => {
    const res = await down.get("/upack/proxy/download/shared?latest");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-disposition"]).toContain("shared.2.0.0.upack");
    const tool = await down.get("/upack/proxy/download/acme/tool?latest");
    expect(tool.headers["content-disposition"]).toContain("tool.1.1.0.upack");
  });

  it("download-file and contentOnly of a remote version fetch it whole first (and keep it)", async () => {
    const file = await down.get("/upack/proxy/download-file/files-pkg/1.0.0?path=package/readme.txt");
    expect(file.statusCode, file.body).toBe(200);
    expect(file.body).toBe("files-pkg 1.0.0 from upstream");
    expect((await cachedRow(down, "files-pkg", "1.0.0"))?.isCached).toBe(1);
    const viewer = { "x-apikey": await createFeedKey(down.t.database, "proxy", ["view"]) };
    const zip = await down.get("/upack/proxy/download/zip-pkg/1.0.0?contentOnly=zip", viewer);
    expect(zip.statusCode, zip.body).toBe(200);
    const entries = await readZip(zip.rawPayload);
    expect(entries.get("readme.txt")).toBe("zip-pkg 1.0.0 from upstream");
    // Not kept for a viewer; the fetched blob is gone once the response is done.
    expect(await cachedRow(down, "zip-pkg", "1.0.0")).toBeUndefined();
    const sha256 = createHash("sha256")
      .update(remote["zip-pkg@1.0.0"]?.bytes ?? "")
      .digest("hex");
    await expectDeletedAtOnce(down, sha256);
  });

  it("serves a remote virtual package as the upstream assembles it (its upack.json names it), never kept", async () => {
    const res = await down.get("/upack/proxy/download/bundle/1.0.0");
    expect(res.statusCode, res.body).toBe(200);
    const entries = await readZip(res.rawPayload);
    expect(JSON.parse(entries.get("upack.json") ?? "{}")).toMatchObject({ name: "bundle", version: "1.0.0" });
    expect(entries.get("package/readme.txt")).toBe("files-pkg 1.0.0 from upstream");
    await pause(100);
    expect(await cachedRow(down, "bundle", "1.0.0")).toBeUndefined();
  });

  it("404 for a version neither the feed nor the upstream has; 400 without a version or latest", async () => {
    expectError(await down.get("/upack/proxy/download/acme/tool/9.9.9"), 404, "9.9.9");
    expectError(await down.get("/upack/proxy/download/nothing/1.0.0"), 404);
    expectError(await down.get("/upack/proxy/download/acme/tool"), 400);
  });
});

describe("an upstream that lies about sha1 or about what a file is", () => {
  let fake: FakeUpstream;
  let down: Downstream;
  const small: Record<"claimed" | "served" | "honest" | "otherVersion", Buffer> = {
    claimed: Buffer.alloc(0),
    served: Buffer.alloc(0),
    honest: Buffer.alloc(0),
    otherVersion: Buffer.alloc(0),
  };
  let large: Buffer = Buffer.alloc(0);

  beforeAll(async () => {
    small.claimed = await buildUpack({ name: "liar", version: "1.0.0" });
    small.honest = await buildUpack({ name: "honest", version: "1.0.0" });
    const chunked = await buildUpack({ name: "chunked", version: "1.0.0" });
    small.served = await buildUpack({ name: "liar", version: "1.0.0", files: { "readme.txt": "tampered" } });
    // Random content does not compress: several chunks on the wire.
    large = await buildUpack({ name: "big-liar", version: "1.0.0", files: { "blob.bin": randomBytes(2 << 20) } });
    small.otherVersion = await buildUpack({ name: "other-version", version: "2.0.0" });
    const notAPackage = Buffer.from("PK\u0003\u0004 but nothing a ZIP reader could open");
    const claims: Record<string, { bytes: Buffer; sha1: string }> = {
      liar: { bytes: small.served, sha1: sha1Hex(small.claimed) },
      "big-liar": { bytes: large, sha1: "0".repeat(40) },
      honest: { bytes: small.honest, sha1: sha1Hex(small.honest) },
      // Its sha1 is right, but its upack.json names another package.
      impostor: { bytes: small.claimed, sha1: sha1Hex(small.claimed) },
      chunked: { bytes: chunked, sha1: sha1Hex(chunked) },
      "other-version": { bytes: small.otherVersion, sha1: sha1Hex(small.otherVersion) },
      "not-a-package": { bytes: notAPackage, sha1: sha1Hex(notAPackage) },
      // Right sha1, several chunks on the wire, but it is `big-liar`.
      "big-impostor": { bytes: large, sha1: sha1Hex(large) },
    };
    fake = await startFakeUpstream((request, response) => {
      const url = new URL(request.url ?? "/", "http://x");
      const name = url.searchParams.get("name") ?? url.pathname.split("/")[4] ?? "";
      const claim = claims[name];
      if (claim === undefined) return void response.writeHead(404).end();
      if (url.pathname.endsWith("/versions")) {
        return sendJson(response, 200, { name, version: "1.0.0", sha1: claim.sha1, size: claim.bytes.length });
      }
      if (name === "chunked") {
        // No Content-Length: the body ends with the last chunk.
        response.writeHead(200, { "content-type": "application/zip" });
        response.write(claim.bytes.subarray(0, 100));
        return void setTimeout(() => response.end(claim.bytes.subarray(100)), 20);
      }
      response.writeHead(200, { "content-type": "application/zip", "content-length": claim.bytes.length });
      response.end(claim.bytes);
    });
    down = await startDownstream({ connectors: [{ name: "liar-up", url: `${fake.base}/upack/feed` }] });
  });
  afterAll(async () => {
    await down?.close();
    await fake?.close();
  });

  /** The downstream's base URL on a real socket (listening from the first call on). */
  async function listening(): Promise<string> {
    if (!down.t.app.server.listening) await down.t.app.listen({ port: 0, host: "127.0.0.1" });
    return `http://127.0.0.1:${(down.t.app.server.address() as AddressInfo).port}`;
  }

  it("refuses a small file whose sha1 does not match: 502 naming the connector, nothing kept", async () => {
    expectError(await down.get("/upack/proxy/download/liar/1.0.0"), 502, "Connector 'liar-up'", "SHA-1");
    await pause(100);
    expect(await cachedRow(down, "liar", "1.0.0")).toBeUndefined();
    expectError(await down.get("/upack/proxy/download-file/liar/1.0.0?path=upack.json"), 502, "SHA-1");
    expect(await cachedRow(down, "liar", "1.0.0")).toBeUndefined();
  });

  it("aborts a large download before its last bytes when the sha1 does not match (real socket)", async () => {
    const res = await fetch(`${await listening()}/upack/proxy/download/big-liar/1.0.0`, {
      headers: { "x-apikey": down.t.adminKey },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe(String(large.length));
    await expect(res.arrayBuffer()).rejects.toThrow();
    await pause(100);
    expect(await cachedRow(down, "big-liar", "1.0.0")).toBeUndefined();
  });

  it("refuses a file whose upack.json names another package or version, as a SHA-1 mismatch: 502, nothing kept", async () => {
    const viewer = { "x-apikey": await createFeedKey(down.t.database, "proxy", ["view"]) };
    for (const headers of [undefined, viewer]) {
      expectError(
        await down.get("/upack/proxy/download/impostor/1.0.0", headers),
        502,
        "Connector 'liar-up'",
        "upack.json names 'liar 1.0.0'",
      );
    }
    expectError(await down.get("/upack/proxy/download/other-version/1.0.0"), 502, "names 'other-version 2.0.0'");
    expectError(await down.get("/upack/proxy/download/not-a-package/1.0.0"), 502, "not a universal package");
    expectError(
      await down.get("/upack/proxy/download-file/impostor/1.0.0?path=upack.json"),
      502,
      "upack.json names 'liar 1.0.0'",
    );
    expectError(await down.get("/upack/proxy/download/impostor/1.0.0?contentOnly=zip"), 502, "names 'liar 1.0.0'");
    await pause(100);
    for (const name of ["impostor", "liar", "other-version", "not-a-package"]) {
      expect(await cachedRow(down, name, "1.0.0")).toBeUndefined();
    }
    // The refused bytes are not left in the store either.
    for (const bytes of [small.claimed, small.otherVersion]) {
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      await expectDeletedAtOnce(down, sha256);
    }
  });

  it("aborts a large download before its last 128 KiB when its upack.json names another package (real socket)", async () => {
    const res = await fetch(`${await listening()}/upack/proxy/download/big-impostor/1.0.0`, {
      headers: { "x-apikey": down.t.adminKey },
    });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let received = 0;
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          received += value.length;
        }
      })(),
    ).rejects.toThrow();
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThanOrEqual(large.length - 128 * 1024);
    await pause(100);
    expect(await cachedRow(down, "big-impostor", "1.0.0")).toBeUndefined();
  });

  it("keeps an honest file from the same upstream; HEAD asks the upstream for no file", async () => {
    const before = fake.requests.filter((r) => r.path.includes("/download/")).length;
    const head = await down.get("/upack/proxy/download/honest/1.0.0", undefined, "HEAD");
    expect(head.statusCode).toBe(200);
    expect(head.headers["content-length"]).toBe(String(small.honest.length));
    expect(fake.requests.filter((r) => r.path.includes("/download/")).length).toBe(before);
    const res = await down.get("/upack/proxy/download/honest/1.0.0");
    expect(res.rawPayload.equals(small.honest)).toBe(true);
    await vi.waitFor(async () => expect((await cachedRow(down, "honest", "1.0.0"))?.isCached).toBe(1), {
      timeout: 5_000,
      interval: 20,
    });
  });

  it("streams and keeps a file the upstream sends without a Content-Length", async () => {
    const res = await down.get("/upack/proxy/download/chunked/1.0.0");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-length"]).toBeUndefined();
    expect(res.rawPayload.subarray(0, 2).toString("latin1")).toBe("PK");
    await vi.waitFor(async () => expect((await cachedRow(down, "chunked", "1.0.0"))?.isCached).toBe(1), {
      timeout: 5_000,
      interval: 20,
    });
  });
});
