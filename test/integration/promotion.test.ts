import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createUser, grant, readAll, readOne } from "../helpers/fixtures.js";
import { expectJson, expectText } from "../helpers/responses.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Promotion (issue 17 section 2; docs/compat.md 5.4, 9, 11): both body shapes, latest and
 * latest-stable, the privileges on either feed (users and feed keys), the same file in both feeds
 * with no byte copied (one package store), provenance in the list, the event in the outbox, and
 * every bad request a clear 4xx.
 */

let t: TestApp;
const PASSWORD = "promotion-test-password-1";

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  for (const [name, feedType, feedGroup] of [
    ["dev", "universal", "pipeline"],
    ["prod", "universal", "pipeline"],
    ["other", "universal", undefined],
    ["files", "asset", undefined],
  ] as const) {
    const res = await admin("POST", "/api/management/feeds/create", {
      name,
      feedType,
      ...(feedGroup ? { feedGroup } : {}),
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  for (const version of ["1.0.0", "1.1.0", "2.0.0-rc.1"]) await upload("dev", "tools", "cli", version);
});
afterAll(async () => t.close());

function admin(method: "GET" | "POST" | "PUT", url: string, payload?: object | Buffer) {
  return t.app.inject({ method, url, headers: { "x-apikey": t.adminKey }, ...(payload ? { payload } : {}) });
}

async function upload(feed: string, group: string, name: string, version: string): Promise<Buffer> {
  const bytes = await buildUpack({ group, name, version, files: { "bin/tool.txt": `${name} ${version}` } });
  const res = await admin("PUT", `/upack/${feed}/upload`, bytes);
  expect(res.statusCode, res.body).toBe(201);
  return bytes;
}

function promote(payload: object, headers: Record<string, string> = { "x-apikey": t.adminKey }) {
  return t.app.inject({ method: "POST", url: "/api/promotions/promote", headers, payload });
}

async function download(feed: string, id: string): Promise<Buffer> {
  const res = await admin("GET", `/upack/${feed}/download/${id}`);
  expect(res.statusCode).toBe(200);
  return res.rawPayload;
}

/** Every blob of the package store (the data directory's, or a cluster node's object store). */
async function blobCount(): Promise<number> {
  let count = 0;
  for await (const _ of createUpackFixtures(t).blobs.list()) count += 1;
  return count;
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
const sha1 = (bytes: Buffer) => createHash("sha1").update(bytes).digest("hex");

describe("POST /api/promotions/promote", () => {
  it("pgutil's body: the same file in the target, no byte copied, a promoted event and a record", async () => {
    const before = await blobCount();
    const res = await promote({
      fromFeed: "dev",
      group: "tools",
      name: "cli",
      version: "1.0.0",
      toFeed: "prod",
      comments: "passed QA",
    });
    const record = expectJson(res) as Record<string, unknown>;
    const original = await download("dev", "tools/cli/1.0.0");
    expect(record).toMatchObject({
      fromFeed: "dev",
      toFeed: "prod",
      group: "tools",
      groupName: "tools",
      name: "cli",
      packageName: "cli",
      version: "1.0.0",
      comments: "passed QA",
      sha1: sha1(original),
      sha256: sha256(original),
    });
    expect(record.promotedBy).toMatch(/\S/);
    expect(record.date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const promoted = await download("prod", "tools/cli/1.0.0");
    expect(sha256(promoted)).toBe(sha256(original));
    expect(await blobCount()).toBe(before);
    const rows = await readAll<{ blob_sha256: string }>(
      t.database,
      "SELECT DISTINCT v.blob_sha256 FROM upack_versions v WHERE v.version = '1.0.0'",
    );
    expect(rows.map((row) => row.blob_sha256)).toEqual([sha256(original)]);

    const event = await readOne<Record<string, string>>(
      t.database,
      "SELECT type, feed_name, package_group, package_name, package_version, actor, data FROM lifecycle_events WHERE type = 'package.promoted'",
    );
    expect(event).toMatchObject({
      type: "package.promoted",
      feed_name: "prod",
      package_group: "tools",
      package_name: "cli",
      package_version: "1.0.0",
      actor: record.promotedBy,
    });
    expect(JSON.parse(event?.data as string)).toMatchObject({ fromFeed: "dev", comments: "passed QA" });
    // A promotion is not also an upload: no package.added for it.
    const added = await readOne<{ n: number }>(
      t.database,
      "SELECT count(*) AS n FROM lifecycle_events WHERE type = 'package.added' AND feed_name = 'prod'",
    );
    expect(added?.n).toBe(0);
  });

  it("InedoCore's body with latest-stable and latest", async () => {
    const stable = expectJson(
      await promote({
        packageName: "cli",
        groupName: "tools",
        version: "latest-stable",
        fromFeed: "dev",
        toFeed: "other",
      }),
    );
    expect(stable).toMatchObject({ version: "1.1.0", toFeed: "other" });
    const latest = expectJson(
      await promote({ PackageName: "cli", GroupName: "tools", Version: "LATEST", FromFeed: "dev", ToFeed: "other" }),
    );
    expect(latest).toMatchObject({ version: "2.0.0-rc.1" });
    expect((await download("other", "tools/cli/2.0.0-rc.1")).length).toBeGreaterThan(0);
  });

  it("a version the target holds: 409 without the overwrite privilege, replaced with it", async () => {
    const userId = await createUser(t.database, "promoter", PASSWORD);
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "dev" });
    await grant(t.database, { user: userId, attributes: ["Feeds_AcceptPackagePromotions"], feed: "prod" });
    const body = { fromFeed: "dev", group: "tools", name: "cli", version: "1.0.0", toFeed: "prod" };
    expectText(await promote(body, basic("promoter", PASSWORD)), 409, "already exists");
    const again = expectJson(await promote({ ...body, comments: "again" })) as Record<string, unknown>;
    expect(again.comments).toBe("again");
  });
});

describe("privileges (docs/compat.md 9)", () => {
  const body = { fromFeed: "dev", group: "tools", name: "cli", version: "1.1.0", toFeed: "prod" };

  it("users: view on the source and accept-promotions or add on the target; 401 for Anonymous", async () => {
    const viewer = await createUser(t.database, "viewer-only", PASSWORD);
    await grant(t.database, { user: viewer, attributes: ["Feeds_ViewFeed"], feed: "dev" });
    expectText(await promote(body, basic("viewer-only", PASSWORD)), 403);

    const blind = await createUser(t.database, "accept-only", PASSWORD);
    await grant(t.database, { user: blind, attributes: ["Feeds_AcceptPackagePromotions"], feed: "prod" });
    expectText(await promote(body, basic("accept-only", PASSWORD)), 403);

    const adder = await createUser(t.database, "adder", PASSWORD);
    await grant(t.database, { user: adder, attributes: ["Feeds_ViewFeed"], feed: "dev" });
    await grant(t.database, { user: adder, attributes: ["Feeds_AddPackage"], feed: "prod" });
    expect(expectJson(await promote(body, basic("adder", PASSWORD)))).toMatchObject({ promotedBy: "adder" });

    expectText(await promote({ ...body, version: "1.0.0" }, {}), 401);
  });

  it("feed keys: `view` and `promote` on both feeds (a feed-group key); a key of one feed cannot", async () => {
    const groupKey = await createFeedKey(t.database, { group: "pipeline" }, ["view", "promote"], {
      displayName: "release bot",
    });
    const res = await promote({ ...body, version: "2.0.0-rc.1" }, { "x-apikey": groupKey });
    expect(expectJson(res)).toMatchObject({ promotedBy: "release bot", version: "2.0.0-rc.1" });

    const viewOnly = await createFeedKey(t.database, { group: "pipeline" }, ["view"]);
    expectText(await promote({ ...body, version: "1.0.0", toFeed: "prod" }, { "x-apikey": viewOnly }), 403);
    const sourceKey = await createFeedKey(t.database, "dev", ["view", "promote", "add"]);
    expectText(await promote({ ...body, toFeed: "other" }, { "x-apikey": sourceKey }), 403);
    // The key in a JSON body is taken as a key (docs/compat.md 0.1), never read as a field.
    const inBody = await promote({ ...body, version: "1.0.0", toFeed: "other", API_Key: groupKey }, {});
    expectText(inBody, 403);
  });
});

describe("bad requests: a clear 4xx", () => {
  const body = { fromFeed: "dev", group: "tools", name: "cli", version: "1.0.0", toFeed: "prod" };

  it.each([
    [{ ...body, name: undefined }, 400, "'name' is required"],
    [{ ...body, toFeed: "" }, 400, "'toFeed' is required"],
    [{ ...body, version: "1.0" }, 400, "is not a version"],
    [{ ...body, version: "9.9.9" }, 404, "was not found in the feed 'dev'"],
    [{ ...body, name: "nothing", version: "latest-stable" }, 404, "has no stable version"],
    [{ ...body, fromFeed: "nowhere" }, 404, "The feed 'nowhere' was not found"],
    [{ ...body, toFeed: "files" }, 400, "only universal package feeds"],
    [{ ...body, toFeed: "dev" }, 400, "promote it to another feed"],
  ])("%j -> %i", async (payload, status, message) => {
    expectText(await promote(payload), status, message);
  });

  it("a body that is neither JSON nor a form: 415", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/promotions/promote",
      headers: { "x-apikey": t.adminKey, "content-type": "application/octet-stream" },
      payload: Buffer.from("fromFeed=dev"),
    });
    expectText(res, 415, "JSON");
  });

  it("no body: the fields from the query string", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/promotions/promote?fromFeed=dev&group=tools&name=cli&version=1.1.0&toFeed=other&comments=query",
      headers: { "x-apikey": t.adminKey },
    });
    expect(expectJson(res)).toMatchObject({ toFeed: "other", version: "1.1.0", comments: "query" });
  });
});

describe("GET /api/promotions/list: provenance", () => {
  it("per feed and package, newest first, with who, when, why and from where", async () => {
    const list = expectJson(await admin("GET", "/api/promotions/list?feed=prod&name=cli&group=tools")) as Array<
      Record<string, unknown>
    >;
    expect(list.length).toBeGreaterThanOrEqual(3);
    const ids = list.map((row) => row.id as number);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(list.every((row) => row.toFeed === "prod" || row.fromFeed === "prod")).toBe(true);

    const ofVersion = expectJson(
      await admin("GET", "/api/promotions/list?toFeed=prod&name=CLI&group=tools&version=1.0.0"),
    );
    expect(ofVersion).toEqual([
      expect.objectContaining({ fromFeed: "dev", comments: "again" }),
      expect.objectContaining({ fromFeed: "dev", comments: "passed QA" }),
    ]);
    const fromDev = expectJson(await admin("GET", "/api/promotions/list?fromFeed=dev&count=2")) as unknown[];
    expect(fromDev).toHaveLength(2);
  });

  it("shows a caller only records of feeds it may view; a named feed it may not view is 403", async () => {
    const userId = await createUser(t.database, "other-viewer", PASSWORD);
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "other" });
    const seen = expectJson(
      await t.app.inject({ method: "GET", url: "/api/promotions/list", headers: basic("other-viewer", PASSWORD) }),
    ) as Array<Record<string, unknown>>;
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((row) => row.toFeed === "other")).toBe(true);
    // Records of feeds it may not see, newer than its own, do not shorten a counted list.
    const hidden = {
      fromFeed: "dev",
      group: "tools",
      name: "cli",
      version: "1.0.0",
      toFeed: "prod",
      comments: "hidden",
    };
    expect((await promote(hidden)).statusCode).toBe(200);
    const all = expectJson(await admin("GET", "/api/promotions/list")) as Array<Record<string, unknown>>;
    expect(all[0]).toMatchObject({ toFeed: "prod", comments: "hidden" });
    const newestSeen = expectJson(
      await t.app.inject({
        method: "GET",
        url: "/api/promotions/list?count=1",
        headers: basic("other-viewer", PASSWORD),
      }),
    );
    expect(newestSeen).toEqual([seen[0]]);
    const refused = await t.app.inject({
      method: "GET",
      url: "/api/promotions/list?feed=prod",
      headers: basic("other-viewer", PASSWORD),
    });
    expectText(refused, 403);
    expectText(await admin("GET", "/api/promotions/list?feed=nowhere"), 404);
    expectText(await admin("GET", "/api/promotions/list?count=many"), 400);
  });
});
