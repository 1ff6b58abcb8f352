import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { versionDataSchema, packageDataSchema } from "../../src/areas/upack/present.js";
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
import { createFeedKey } from "../helpers/fixtures.js";

/**
 * Listings of a universal feed with a connector to another Wharf (docs/compat.md 2.2, 2.3, 2.11, 5.3):
 * remote packages look like the feed's own, local versions shadow remote ones, connector filters
 * hide packages, entries say whether they are local or cached, the connector's Basic credentials
 * reach the upstream, and a feed without connectors answers exactly as before.
 */

interface PackageJson {
  group?: string;
  name: string;
  latestVersion: string;
  versions: string[];
  isLocal: boolean;
  isCached: boolean;
  title?: string;
}
interface VersionJson {
  group?: string;
  name: string;
  version: string;
  sha1: string;
  isLocal: boolean;
  isCached: boolean;
}

const ids = (list: Array<{ group?: string; name: string }>) =>
  list.map((p) => (p.group ? `${p.group}/${p.name}` : p.name));

describe("a universal feed with a connector to another Wharf: listings", () => {
  let up: UpstreamWharf;
  let second: FakeUpstream;
  let down: Downstream;
  const remoteSha1: Record<string, string> = {};
  const localSha1: Record<string, string> = {};

  beforeAll(async () => {
    up = await startUpstreamWharf();
    for (const [group, name, version, title] of [
      ["", "shared", "1.0.0", "Shared (remote)"],
      ["", "shared", "2.0.0", "Shared (remote)"],
      ["acme", "tool", "1.0.0", "A remote tool"],
      ["acme", "tool", "1.1.0", "A remote tool"],
      ["", "blocked-thing", "1.0.0", "Hidden by the connector's filters"],
    ] as const) {
      const added = await up.upack.addVersion("remote", { group, name, version, manifest: { title } });
      remoteSha1[`${group}/${name}@${version}`] = added.sha1;
    }
    // A second upstream that also has `shared` 2.0.0 (other bytes), a 3.0.0, and an acme/tool 9.0.0.
    second = await startFakeUpstream((request, response) => {
      const url = new URL(request.url ?? "/", "http://x");
      const name = url.searchParams.get("name");
      const shared = [
        { name: "shared", version: "3.0.0", sha1: "e".repeat(40) },
        { name: "shared", version: "2.0.0", sha1: "f".repeat(40) },
      ];
      const tool = { group: "acme", name: "tool", latestVersion: "9.0.0", versions: ["9.0.0"], title: "fake" };
      if (url.pathname.endsWith("/versions") && name === "shared") return sendJson(response, 200, shared);
      if (url.pathname.endsWith("/packages") && name === "tool") return sendJson(response, 200, tool);
      if (url.pathname.endsWith("/packages") && name === null) return sendJson(response, 200, [tool]);
      response.writeHead(404).end();
    });
    down = await startDownstream({
      connectors: [
        // Merges into the feed's own `shared`: how versions combine (shadowing: upack-connectors-shadowing).
        { name: "up", url: up.feedUrl, ...up.credentials, filters: ["!blocked-*"], mergeWithLocalPackages: true },
        { name: "second", url: `${second.base}/upack/feed` },
      ],
      feeds: { proxy: { connectors: ["up"] }, plain: { connectors: [] }, both: { connectors: ["up", "second"] } },
    });
    for (const [name, version] of [
      ["shared", "1.0.0"],
      ["shared", "1.5.0"],
      ["mine", "1.0.0"],
    ] as const) {
      const added = await down.upack.addVersion("proxy", { name, version, manifest: { title: `${name} (local)` } });
      localSha1[`${name}@${version}`] = added.sha1;
    }
    await down.upack.addVersion("plain", { name: "mine", version: "1.0.0" });
  });
  afterAll(async () => {
    await down?.close();
    await up?.close();
    await second?.close();
  });

  it("packages: local and remote packages in one list, by group then name; local entries keep their own data", async () => {
    const list = okJson<PackageJson[]>(await down.get("/upack/proxy/packages"));
    for (const item of list) packageDataSchema.parse(item);
    expect(ids(list)).toEqual(["mine", "shared", "acme/tool"]);
    const [mine, shared, tool] = list as [PackageJson, PackageJson, PackageJson];
    expect(mine).toMatchObject({ isLocal: true, isCached: false, versions: ["1.0.0"] });
    // The feed's own entry, with every version a client could download.
    expect(shared).toMatchObject({ title: "shared (local)", isLocal: true, isCached: false });
    expect(shared.versions).toEqual(["2.0.0", "1.5.0", "1.0.0"]);
    expect(shared.latestVersion).toBe("2.0.0");
    expect(tool).toMatchObject({
      group: "acme",
      title: "A remote tool",
      latestVersion: "1.1.0",
      versions: ["1.1.0", "1.0.0"],
      isLocal: false,
      isCached: false,
    });
  });

  it("packages: count applies to the merged list, group selects exactly", async () => {
    expect(ids(okJson<PackageJson[]>(await down.get("/upack/proxy/packages?count=2")))).toEqual(["mine", "shared"]);
    expect(ids(okJson<PackageJson[]>(await down.get("/upack/proxy/packages?group=acme")))).toEqual(["acme/tool"]);
    expect(okJson(await down.get("/upack/proxy/packages?group=nothing-here"))).toEqual([]);
  });

  it("packages?name=: one object, from the feed or the connector; 404 when neither has it", async () => {
    const tool = okJson<PackageJson>(await down.get("/upack/proxy/packages?group=acme&name=TOOL"));
    expect(tool).toMatchObject({ group: "acme", name: "tool", isLocal: false, versions: ["1.1.0", "1.0.0"] });
    const shared = okJson<PackageJson>(await down.get("/upack/proxy/packages?name=shared"));
    expect(shared).toMatchObject({ isLocal: true, latestVersion: "2.0.0", versions: ["2.0.0", "1.5.0", "1.0.0"] });
    expectError(await down.get("/upack/proxy/packages?name=nowhere"), 404, "nowhere");
  });

  it("filters hide remote packages everywhere: lists, single lookups, versions, search, downloads", async () => {
    expectError(await down.get("/upack/proxy/packages?name=blocked-thing"), 404);
    expect(okJson(await down.get("/upack/proxy/versions?name=blocked-thing"))).toEqual([]);
    expectError(await down.get("/upack/proxy/versions?name=blocked-thing&version=1.0.0"), 404);
    expect(okJson(await down.get("/upack/proxy/search?term=blocked"))).toEqual([]);
    expectError(await down.get("/upack/proxy/download/blocked-thing/1.0.0"), 404);
    const all = okJson<VersionJson[]>(await down.get("/upack/proxy/versions"));
    expect(all.some((v) => v.name === "blocked-thing")).toBe(false);
  });

  it("versions?name=: local versions shadow the remote one with the same number; newest first", async () => {
    const list = okJson<VersionJson[]>(await down.get("/upack/proxy/versions?name=shared"));
    for (const item of list) versionDataSchema.parse(item);
    expect(list.map((v) => [v.version, v.isLocal, v.isCached])).toEqual([
      ["2.0.0", false, false],
      ["1.5.0", true, false],
      ["1.0.0", true, false],
    ]);
    expect(list[0]?.sha1).toBe(remoteSha1["/shared@2.0.0"]);
    expect(list[2]?.sha1).toBe(localSha1["shared@1.0.0"]);
    expect(list[2]?.sha1).not.toBe(remoteSha1["/shared@1.0.0"]);
  });

  it("versions?version=: the feed's own when it has it, else the connector's; 404 for neither", async () => {
    const local = okJson<VersionJson>(await down.get("/upack/proxy/versions?name=shared&version=1.0.0"));
    expect(local).toMatchObject({ isLocal: true, sha1: localSha1["shared@1.0.0"] });
    const remote = okJson<VersionJson>(await down.get("/upack/proxy/versions?group=acme&name=tool&version=1.1.0"));
    versionDataSchema.parse(remote);
    expect(remote).toMatchObject({ group: "acme", name: "tool", version: "1.1.0", isLocal: false, isCached: false });
    expect(remote.sha1).toBe(remoteSha1["acme/tool@1.1.0"]);
    expectError(await down.get("/upack/proxy/versions?group=acme&name=tool&version=9.9.9"), 404, "9.9.9");
  });

  it("versions without a name: every source, sorted by group, name, newest first; count on the merged list", async () => {
    const list = okJson<VersionJson[]>(await down.get("/upack/proxy/versions"));
    expect(list.map((v) => `${v.group ?? ""}/${v.name}@${v.version}`)).toEqual([
      "/mine@1.0.0",
      "/shared@2.0.0",
      "/shared@1.5.0",
      "/shared@1.0.0",
      "acme/tool@1.1.0",
      "acme/tool@1.0.0",
    ]);
    expect(okJson<VersionJson[]>(await down.get("/upack/proxy/versions?count=3"))).toHaveLength(3);
    const files = okJson<Array<VersionJson & { fileList?: unknown }>>(
      await down.get("/upack/proxy/versions?group=acme&name=tool&includeFileList=true"),
    );
    expect(files[0]?.fileList).toEqual([expect.objectContaining({ name: "readme.txt" })]);
  });

  it("search: local matches first, then the connector's, each package once", async () => {
    const found = okJson<PackageJson[]>(await down.get("/upack/proxy/search?term=tool"));
    expect(ids(found)).toEqual(["acme/tool"]);
    expect(found[0]).toMatchObject({ isLocal: false, isCached: false });
    const shared = okJson<PackageJson[]>(await down.get("/upack/proxy/search?query=shared"));
    expect(shared).toHaveLength(1);
    expect(shared[0]).toMatchObject({ isLocal: true, versions: ["2.0.0", "1.5.0", "1.0.0"] });
    expect(ids(okJson<PackageJson[]>(await down.get("/upack/proxy/search?term=")))).toEqual([
      "mine",
      "shared",
      "acme/tool",
    ]);
  });

  it("sends the connector's Basic credentials: without them the upstream refuses, and the answer is a 502 naming it", async () => {
    const other = await startDownstream({ connectors: [{ name: "anonymous-up", url: up.feedUrl }] });
    try {
      expectError(
        await other.get("/upack/proxy/packages?group=acme&name=tool"),
        502,
        "Connector 'anonymous-up'",
        "401",
      );
      // With the credentials, the same upstream answers.
      const ok = await other.t.app.inject({
        method: "POST",
        url: "/api/management/connectors/update/anonymous-up",
        headers: { "x-apikey": other.t.adminKey },
        payload: up.credentials,
      });
      expect(ok.statusCode, ok.body).toBe(200);
      expect(okJson<PackageJson>(await other.get("/upack/proxy/packages?group=acme&name=tool")).isLocal).toBe(false);
    } finally {
      await other.close();
    }
  });

  it("needs only Feeds_ViewFeed on the feed to list remote packages", async () => {
    const viewer = { "x-apikey": await createFeedKey(down.t.database, "proxy", ["view"]) };
    expect(ids(okJson<PackageJson[]>(await down.get("/upack/proxy/packages", viewer)))).toContain("acme/tool");
    const stranger = { "x-apikey": await createFeedKey(down.t.database, "plain", ["view"]) };
    expect((await down.get("/upack/proxy/packages", stranger)).statusCode).toBe(403);
  });

  it("a feed without connectors answers as before: only what it stores, no RemotePackages service", async () => {
    expect(ids(okJson<PackageJson[]>(await down.get("/upack/plain/packages")))).toEqual(["mine"]);
    expectError(await down.get("/upack/plain/packages?group=acme&name=tool"), 404);
    expect(okJson(await down.get("/upack/plain/versions?name=shared"))).toEqual([]);
    expectError(await down.get("/upack/plain/download/acme/tool/1.0.0"), 404);
    const plain = okJson<{ services: string[] }>(await down.get("/upack/plain/meta"));
    expect(plain.services).not.toContain("RemotePackages");
    const proxy = okJson<{ services: string[]; packageCount: number }>(await down.get("/upack/proxy/meta"));
    expect(proxy.services).toContain("RemotePackages");
    // meta counts what the feed stores.
    expect(proxy.packageCount).toBe(2);
  });

  it("with several connectors, the first in the feed's list wins a version; package entries merge every version", async () => {
    const versions = okJson<VersionJson[]>(await down.get("/upack/both/versions?name=shared"));
    expect(versions.map((v) => [v.version, v.sha1])).toEqual([
      ["3.0.0", "e".repeat(40)],
      ["2.0.0", remoteSha1["/shared@2.0.0"]],
      ["1.0.0", remoteSha1["/shared@1.0.0"]],
    ]);
    const tool = okJson<PackageJson>(await down.get("/upack/both/packages?group=acme&name=tool"));
    expect(tool).toMatchObject({
      title: "A remote tool",
      latestVersion: "9.0.0",
      versions: ["9.0.0", "1.1.0", "1.0.0"],
    });
    expect(ids(okJson<PackageJson[]>(await down.get("/upack/both/packages")))).toEqual(["shared", "acme/tool"]);
  });

  it("filters apply as soon as a connector is updated: `group/name` patterns", async () => {
    const res = await down.t.app.inject({
      method: "POST",
      url: "/api/management/connectors/update/up",
      headers: { "x-apikey": down.t.adminKey },
      payload: { filters: ["acme/*"] },
    });
    expect(res.statusCode, res.body).toBe(200);
    const list = okJson<PackageJson[]>(await down.get("/upack/proxy/packages"));
    expect(ids(list)).toEqual(["mine", "shared", "acme/tool"]);
    // The remote `shared` versions are hidden now: only the feed's own are left.
    expect(list[1]?.versions).toEqual(["1.5.0", "1.0.0"]);
  });
});
