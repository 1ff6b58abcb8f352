import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type Downstream,
  expectError,
  type FakeUpstream,
  okJson,
  sendJson,
  startDownstream,
  startFakeUpstream,
} from "../helpers/connector-fixtures.js";
import { buildUpack, sha1Hex } from "../helpers/upack-fixtures.js";

/**
 * Dependency confusion: a package the feed publishes itself is not taken over by an upstream that
 * lists a higher version of the same name. By default a local package shadows the connector's
 * package entirely (listings, search, `latest`, downloads); a connector with
 * `mergeWithLocalPackages` merges as before; packages the feed does not publish (remote only, or
 * only cached) still come through.
 */

interface PackageJson {
  group?: string;
  name: string;
  latestVersion: string;
  versions: string[];
  isLocal: boolean;
}
interface VersionJson {
  group?: string;
  name: string;
  version: string;
  isLocal: boolean;
  isCached: boolean;
}

/** What the upstream publishes: acme/app (a higher version than the feed's own), acme/other, acme/lib. */
const UPSTREAM = [
  ["app", "99.0.0"],
  ["app", "1.0.0"],
  ["other", "2.0.0"],
  ["lib", "2.0.0"],
  ["lib", "1.0.0"],
] as const;

const nameOf = (v: { group?: string; name: string }) => `${v.group ?? ""}/${v.name}`;

describe("connectors and the feed's own packages", () => {
  let fake: FakeUpstream;
  let down: Downstream;
  const bytes = new Map<string, Buffer>();
  let localApp: Buffer;

  function versionJson(name: string, version: string) {
    const file = bytes.get(`${name}@${version}`) ?? Buffer.alloc(0);
    return { group: "acme", name, version, sha1: sha1Hex(file), size: file.length };
  }
  function packageJson(name: string) {
    const versions = UPSTREAM.filter(([n]) => n === name).map(([, v]) => v);
    return { group: "acme", name, latestVersion: versions[0], versions };
  }
  const names = [...new Set(UPSTREAM.map(([name]) => name))];

  function upstream(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? "/", "http://x");
    const name = url.searchParams.get("name");
    const version = url.searchParams.get("version");
    const download = /^\/upack\/feed\/download\/acme\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (download) {
      const file = bytes.get(`${download[1]}@${download[2]}`);
      if (file === undefined) return void response.writeHead(404).end();
      return void response.writeHead(200, { "content-type": "application/zip" }).end(file);
    }
    if (url.pathname === "/upack/feed/versions") {
      const all = UPSTREAM.filter(([n, v]) => (name === null || n === name) && (version === null || v === version));
      const list = all.map(([n, v]) => versionJson(n, v));
      if (version !== null) return list[0] ? sendJson(response, 200, list[0]) : void response.writeHead(404).end();
      return sendJson(response, 200, list);
    }
    if (url.pathname === "/upack/feed/packages" && name !== null) {
      return names.includes(name as never)
        ? sendJson(response, 200, packageJson(name))
        : void response.writeHead(404).end();
    }
    if (url.pathname === "/upack/feed/packages" || url.pathname === "/upack/feed/search") {
      return sendJson(response, 200, names.map(packageJson));
    }
    response.writeHead(404).end();
  }

  beforeAll(async () => {
    for (const [name, version] of UPSTREAM) {
      bytes.set(`${name}@${version}`, await buildUpack({ group: "acme", name, version, manifest: { title: "up" } }));
    }
    fake = await startFakeUpstream(upstream);
    const url = `${fake.base}/upack/feed`;
    down = await startDownstream({
      connectors: [
        { name: "public", url },
        { name: "trusted", url, mergeWithLocalPackages: true },
      ],
      feeds: { shadow: { connectors: ["public"] }, merging: { connectors: ["trusted"] } },
    });
    for (const feed of ["shadow", "merging"]) {
      localApp = (await down.upack.addVersion(feed, { group: "acme", name: "app", version: "1.0.0" })).bytes;
      // Pulled from the connector earlier: cached versions do not make a package the feed's.
      await down.upack.addVersion(feed, { group: "acme", name: "lib", version: "1.0.0" }, { isCached: true });
    }
  });
  afterAll(async () => {
    await down?.close();
    await fake?.close();
  });

  it("connectors say whether they merge with local packages: false unless set, a boolean or 400", async () => {
    const admin = { "x-apikey": down.t.adminKey };
    const pub = okJson<{ mergeWithLocalPackages: boolean }>(
      await down.get("/api/management/connectors/get/public", admin),
    );
    expect(pub.mergeWithLocalPackages).toBe(false);
    const trusted = okJson<{ mergeWithLocalPackages: boolean }>(
      await down.get("/api/management/connectors/get/trusted", admin),
    );
    expect(trusted.mergeWithLocalPackages).toBe(true);
    const bad = await down.t.app.inject({
      method: "POST",
      url: "/api/management/connectors/update/public",
      headers: admin,
      payload: { mergeWithLocalPackages: "yes" },
    });
    expect(bad.statusCode, bad.body).toBe(400);
    expect(bad.headers["content-type"]).toBe("text/plain");
    expect(bad.body).toContain("mergeWithLocalPackages");
  });

  it("by default, a local package hides the upstream's versions of it in every listing", async () => {
    const versions = okJson<VersionJson[]>(await down.get("/upack/shadow/versions?group=acme&name=app"));
    expect(versions.map((v) => [v.version, v.isLocal])).toEqual([["1.0.0", true]]);
    const app = okJson<PackageJson>(await down.get("/upack/shadow/packages?group=acme&name=app"));
    expect(app).toMatchObject({ latestVersion: "1.0.0", versions: ["1.0.0"], isLocal: true });
    const listed = okJson<PackageJson[]>(await down.get("/upack/shadow/packages"));
    expect(listed.map((p) => [nameOf(p), p.latestVersion, p.versions])).toEqual([
      ["acme/app", "1.0.0", ["1.0.0"]],
      ["acme/lib", "2.0.0", ["2.0.0", "1.0.0"]],
      ["acme/other", "2.0.0", ["2.0.0"]],
    ]);
    const found = okJson<PackageJson[]>(await down.get("/upack/shadow/search?term=app"));
    expect(found.find((p) => p.name === "app")).toMatchObject({ latestVersion: "1.0.0", versions: ["1.0.0"] });
    const all = okJson<VersionJson[]>(await down.get("/upack/shadow/versions"));
    expect(all.filter((v) => v.name === "app").map((v) => v.version)).toEqual(["1.0.0"]);
    expectError(await down.get("/upack/shadow/versions?group=acme&name=app&version=99.0.0"), 404, "99.0.0");
  });

  it("by default, latest is the feed's own, and the upstream's version of a local package is not served (404)", async () => {
    const latest = await down.get("/upack/shadow/download/acme/app?latest");
    expect(latest.statusCode, latest.body).toBe(200);
    expect(latest.headers["content-disposition"]).toContain("app.1.0.0.upack");
    expect(latest.rawPayload.equals(localApp)).toBe(true);
    expectError(await down.get("/upack/shadow/download/acme/app/99.0.0"), 404, "99.0.0");
    expectError(await down.get("/upack/shadow/download/acme/APP/99.0.0", undefined, "HEAD"), 404);
    expectError(await down.get("/upack/shadow/download-file/acme/app/99.0.0?path=upack.json"), 404);
    expect(fake.requests.some((r) => r.path.includes("/download/acme/app/"))).toBe(false);
  });

  it("packages the feed does not publish still come from the connector, cached ones included", async () => {
    const other = await down.get("/upack/shadow/download/acme/other?latest");
    expect(other.statusCode, other.body).toBe(200);
    expect(other.rawPayload.equals(bytes.get("other@2.0.0") ?? Buffer.alloc(0))).toBe(true);
    const lib = await down.get("/upack/shadow/download/acme/lib?latest");
    expect(lib.statusCode, lib.body).toBe(200);
    expect(lib.headers["content-disposition"]).toContain("lib.2.0.0.upack");
    const versions = okJson<VersionJson[]>(await down.get("/upack/shadow/versions?group=acme&name=lib"));
    expect(versions.map((v) => v.version)).toEqual(["2.0.0", "1.0.0"]);
  });

  it("a connector that merges with local packages adds its versions: latest is the upstream's 99.0.0", async () => {
    const versions = okJson<VersionJson[]>(await down.get("/upack/merging/versions?group=acme&name=app"));
    expect(versions.map((v) => [v.version, v.isLocal])).toEqual([
      ["99.0.0", false],
      ["1.0.0", true],
    ]);
    const latest = await down.get("/upack/merging/download/acme/app?latest");
    expect(latest.statusCode, latest.body).toBe(200);
    expect(latest.headers["content-disposition"]).toContain("app.99.0.0.upack");
    expect(latest.rawPayload.equals(bytes.get("app@99.0.0") ?? Buffer.alloc(0))).toBe(true);
  });

  it("turning merging on for a connector takes effect at once", async () => {
    const res = await down.t.app.inject({
      method: "POST",
      url: "/api/management/connectors/update/public",
      headers: { "x-apikey": down.t.adminKey },
      payload: { mergeWithLocalPackages: true },
    });
    expect(okJson<{ mergeWithLocalPackages: boolean }>(res).mergeWithLocalPackages).toBe(true);
    await vi.waitFor(
      async () => {
        const app = okJson<PackageJson>(await down.get("/upack/shadow/packages?group=acme&name=app"));
        expect(app.versions).toEqual(["99.0.0", "1.0.0"]);
      },
      { timeout: 5_000, interval: 20 },
    );
    expect((await down.get("/upack/shadow/download/acme/app/99.0.0")).statusCode).toBe(200);
  });
});
