import { createHash, randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import yauzl from "yauzl";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateManifest } from "../../src/domain/upack-manifest.js";
import { openZip } from "../../src/storage/zip.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createUser, grant, readOne } from "../helpers/fixtures.js";
import { expectJson, expectText } from "../helpers/responses.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * Repackaging (issue 17 section 2; docs/compat.md 1.2, 1.5, 5.4): a release candidate published as
 * the release. The new package is downloaded and unzipped: its upack.json names the new version,
 * keeps every other property and records the original (identity, SHA-1, SHA-256, who, when, why)
 * in repackageHistory; every other entry is the original's, byte for byte. The original stays.
 */

let t: TestApp;
const PASSWORD = "repackaging-test-password";
const BINARY = randomBytes(300_000);
const GZIPPED = gzipSync(Buffer.from("already compressed ".repeat(2000)));
let original: Buffer;

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  for (const name of ["builds", "releases"]) {
    const res = await admin("POST", "/api/management/feeds/create", { name, feedType: "universal" });
    expect(res.statusCode, res.body).toBe(201);
  }
  original = await buildUpack({
    group: "acme/apps",
    name: "web",
    version: "1.2.0-rc.3",
    manifest: {
      title: "Web app",
      _buildId: 1234,
      repackageHistory: ["acme/apps/web:1.2.0-ci.7:0123456789abcdef0123456789abcdef01234567"],
    },
    files: { "app.bin": BINARY, "assets/site.tgz": GZIPPED, "readme.md": "# Web\n", "empty/": null },
    rootFiles: { "install.ps1": "Write-Host hi" },
  });
  expect((await admin("PUT", "/upack/builds/upload", original)).statusCode).toBe(201);
});
afterAll(async () => t.close());

function admin(method: "GET" | "POST" | "PUT", url: string, payload?: object | Buffer) {
  return t.app.inject({ method, url, headers: { "x-apikey": t.adminKey }, ...(payload ? { payload } : {}) });
}

function repackage(payload: object, headers: Record<string, string> = { "x-apikey": t.adminKey }) {
  return t.app.inject({ method: "POST", url: "/api/repackaging/repackage", headers, payload });
}

/** Every entry of a ZIP: its bytes, or null for a directory. */
async function entriesOf(bytes: Buffer): Promise<Map<string, Buffer | null>> {
  const zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
  const entries = new Map<string, Buffer | null>();
  for await (const entry of zip.eachEntry()) {
    if (entry.fileName.endsWith("/")) {
      entries.set(entry.fileName, null);
      continue;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of (await zip.openReadStreamPromise(entry)) as AsyncIterable<Buffer>) chunks.push(chunk);
    entries.set(entry.fileName, Buffer.concat(chunks));
  }
  return entries;
}

const sha1 = (bytes: Buffer) => createHash("sha1").update(bytes).digest("hex");
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("POST /api/repackaging/repackage", () => {
  it("a round trip: 1.2.0-rc.3 becomes 1.2.0 in its feed, upack.json rewritten, every other entry unchanged", async () => {
    const record = expectJson(
      await repackage({
        feed: "builds",
        group: "acme/apps",
        name: "web",
        version: "1.2.0-rc.3",
        newVersion: "1.2.0",
        comments: "release 1.2",
      }),
    );
    expect(record).toMatchObject({
      feed: "builds",
      fromFeed: "builds",
      group: "acme/apps",
      name: "web",
      version: "1.2.0",
      newVersion: "1.2.0",
      fromVersion: "1.2.0-rc.3",
      fromSha1: sha1(original),
      fromSha256: sha256(original),
      comments: "release 1.2",
    });

    const res = await admin("GET", "/upack/builds/download/acme/apps/web/1.2.0");
    expect(res.statusCode).toBe(200);
    const repackaged = res.rawPayload;
    const before = await entriesOf(original);
    const after = await entriesOf(repackaged);
    // upack.json first, as clients that stream the file expect.
    expect([...after.keys()][0]).toBe("upack.json");
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [name, bytes] of before) {
      if (name !== "upack.json") expect(after.get(name), name).toEqual(bytes);
    }

    const manifestJson = JSON.parse((after.get("upack.json") as Buffer).toString("utf8")) as Record<string, unknown>;
    // What upack reads back (docs/compat.md 1.2): a valid manifest of the new version.
    const manifest = validateManifest(manifestJson);
    expect(manifestJson).toMatchObject({
      group: "acme/apps",
      name: "web",
      version: "1.2.0",
      title: "Web app",
      _buildId: 1234,
    });
    expect(manifest.repackageHistory).toHaveLength(2);
    expect(manifest.repackageHistory?.[0]).toBe("acme/apps/web:1.2.0-ci.7:0123456789abcdef0123456789abcdef01234567");
    expect(manifest.repackageHistory?.[1]).toEqual({
      id: `acme/apps/web:1.2.0-rc.3:${sha1(original)}`,
      date: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      reason: "release 1.2",
      using: expect.stringMatching(/^Wharf\//),
      by: expect.any(String),
      _sha256: sha256(original),
      _feed: "builds",
    });

    // Stored as a normal version, with the digests of the new file; the original is still there.
    const version = expectJson(
      await admin("GET", "/upack/builds/versions?group=acme/apps&name=web&version=1.2.0"),
    ) as Record<string, unknown>;
    expect(version.sha1).toBe(sha1(repackaged));
    const kept = await admin("GET", "/upack/builds/download/acme/apps/web/1.2.0-rc.3");
    expect(sha256(kept.rawPayload)).toBe(sha256(original));

    // The local headers agree with the central directory (the check every upload passes).
    const { writeFile, mkdtemp, rm } = await import("node:fs/promises");
    const dir = await mkdtemp(`${t.dataDir}/check-`);
    await writeFile(`${dir}/web.upack`, repackaged);
    const reader = await openZip(`${dir}/web.upack`);
    await reader.verifyLocalHeaders();
    await reader.close();
    await rm(dir, { recursive: true });

    const event = await readOne<Record<string, string>>(
      t.database,
      "SELECT type, feed_name, package_version, data FROM lifecycle_events WHERE package_version = '1.2.0'",
    );
    expect(event).toMatchObject({ type: "package.added", feed_name: "builds", package_version: "1.2.0" });
    expect(JSON.parse(event?.data as string)).toMatchObject({
      repackagedFrom: { feed: "builds", group: "acme/apps", name: "web", version: "1.2.0-rc.3", sha1: sha1(original) },
      comments: "release 1.2",
    });
  });

  it("into another feed (toFeed); latest; listed as provenance of either version", async () => {
    const record = expectJson(
      await repackage({
        feed: "builds",
        toFeed: "releases",
        groupName: "acme/apps",
        packageName: "web",
        version: "latest-stable",
        newVersion: "1.2.1",
      }),
    );
    expect(record).toMatchObject({ feed: "releases", fromFeed: "builds", fromVersion: "1.2.0", version: "1.2.1" });
    expect(record).not.toHaveProperty("comments");
    expect((await admin("GET", "/upack/releases/download/acme/apps/web/1.2.1")).statusCode).toBe(200);
    expect((await admin("GET", "/upack/releases/download/acme/apps/web/1.2.0")).statusCode).toBe(404);

    const ofNew = expectJson(
      await admin("GET", "/api/repackaging/list?feed=releases&name=web&group=acme/apps&version=1.2.1"),
    );
    expect(ofNew).toEqual([expect.objectContaining({ fromFeed: "builds", fromVersion: "1.2.0" })]);
    const ofOriginal = expectJson(
      await admin("GET", "/api/repackaging/list?feed=builds&version=1.2.0-rc.3"),
    ) as unknown[];
    expect(ofOriginal).toEqual([expect.objectContaining({ version: "1.2.0", fromVersion: "1.2.0-rc.3" })]);
    const all = expectJson(await admin("GET", "/api/repackaging/list?name=web")) as Array<{ version: string }>;
    expect(all.map((row) => row.version)).toEqual(["1.2.1", "1.2.0"]);
  });

  it("privileges: view on the source, add on the target; overwrite to replace (else 409)", async () => {
    const body = {
      feed: "builds",
      toFeed: "releases",
      group: "acme/apps",
      name: "web",
      version: "1.2.0-rc.3",
      newVersion: "1.3.0",
    };
    const viewer = await createUser(t.database, "viewer", PASSWORD);
    await grant(t.database, { user: viewer, attributes: ["Feeds_ViewFeed"] });
    expectText(await repackage(body, basic("viewer", PASSWORD)), 403);
    const promoter = await createUser(t.database, "promoter", PASSWORD);
    await grant(t.database, { user: promoter, attributes: ["Feeds_ViewFeed"] });
    await grant(t.database, { user: promoter, attributes: ["Feeds_AcceptPackagePromotions"], feed: "releases" });
    expectText(await repackage(body, basic("promoter", PASSWORD)), 403);
    const releaser = await createUser(t.database, "releaser", PASSWORD);
    await grant(t.database, { user: releaser, attributes: ["Feeds_ViewFeed"], feed: "builds" });
    await grant(t.database, { user: releaser, attributes: ["Feeds_AddPackage"], feed: "releases" });
    expect(expectJson(await repackage(body, basic("releaser", PASSWORD)))).toMatchObject({ repackagedBy: "releaser" });
    expectText(await repackage(body, basic("releaser", PASSWORD)), 409, "already exists");
    expectText(await repackage(body, {}), 401);

    // A feed key's `add` is Add/Repackage (docs/compat.md 9): on its own feed.
    const key = await createFeedKey(t.database, "builds", ["view", "add"], { displayName: "ci" });
    expect(
      expectJson(await repackage({ ...body, toFeed: undefined, newVersion: "1.2.0-final" }, { "x-apikey": key })),
    ).toMatchObject({
      repackagedBy: "ci",
    });
    expectText(await repackage({ ...body, newVersion: "1.4.0" }, { "x-apikey": key }), 403);
  });

  it.each([
    [{ newVersion: "" }, 400, "'newVersion' is required"],
    [{ newVersion: "1.2" }, 400, "newVersion '1.2'"],
    [{ newVersion: "1.2.0-rc.3" }, 400, "must differ"],
    [{ version: "0.0.1" }, 404, "was not found"],
    [{ feed: "nowhere" }, 404, "'nowhere' was not found"],
    [{ toFeed: "nowhere" }, 404, "'nowhere' was not found"],
  ])("%j -> %i", async (change, status, message) => {
    const body = {
      feed: "builds",
      group: "acme/apps",
      name: "web",
      version: "1.2.0-rc.3",
      newVersion: "9.0.0",
      ...change,
    };
    expectText(await repackage(body), status, message);
  });
});
