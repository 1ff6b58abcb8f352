import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InjectOptions } from "fastify";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createUser, grant, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { buildUpack, createUpackFixtures, type PackageSpec, type UpackFixtures } from "../helpers/upack-fixtures.js";
import { expectText } from "../helpers/responses.js";

/**
 * Delete stories (docs/seed-api.md A "Delete package", docs/compat.md 2.8, 2.12, 2.14; docs/clients.md 3.9):
 * DELETE or POST `delete/<group...>/<name>/<version>`, 200 when gone, 404 "package was not found",
 * 400 for a bad path, Feeds_DeletePackage needed; the package's listing columns follow.
 */

let t: TestApp;
let admin: Record<string, string>;
let fixtures: UpackFixtures;

beforeAll(async () => {
  t = await buildTestApp();
  admin = { "x-apikey": t.adminKey };
  fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.createFeed("second");
});
afterAll(async () => t.close());

async function upload(spec: PackageSpec, feed = "main"): Promise<{ sha256: string }> {
  const res = await t.app.inject({
    method: "PUT",
    url: `/upack/${feed}/upload`,
    headers: admin,
    payload: await buildUpack(spec),
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { sha256: string };
}

function remove(url: string, headers: Record<string, string> = admin, method: InjectOptions["method"] = "DELETE") {
  return t.app.inject({ method, url, headers });
}

function packageRow(name: string): Promise<{ versions_desc: string; latest: string | null } | undefined> {
  return readOne(
    t.database,
    `SELECT p.versions_desc, v.version AS latest FROM upack_packages p
       LEFT JOIN upack_versions v ON v.id = p.latest_version_id WHERE p.name_key = ?`,
    name.toLowerCase(),
  );
}

const blobExists = async (sha256: string) => (await fixtures.blobs.stat(sha256)) !== undefined;
/**
 * A file nobody references is deleted at once on the disk store; a cluster node deletes none
 * eagerly (another node may be storing the same bytes) and leaves it to garbage collection
 * (docs/cluster-mode.md, Blobs).
 */
const deletesUnusedFilesAtOnce = !testsRunOnPostgres();

describe("deleting a version", () => {
  it("DELETE: 200 with an empty body; the listing columns follow; the last version takes the package along", async () => {
    const one = await upload({ name: "del-a", version: "1.0.0" });
    await upload({ name: "del-a", version: "2.0.0-rc.1" });
    await upload({ name: "del-a", version: "2.0.0" });
    expect(await packageRow("del-a")).toEqual({ versions_desc: '["2.0.0","2.0.0-rc.1","1.0.0"]', latest: "2.0.0" });

    const res = await remove("/upack/main/delete/del-a/2.0.0");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toBe("");
    expect(await packageRow("del-a")).toEqual({ versions_desc: '["2.0.0-rc.1","1.0.0"]', latest: "2.0.0-rc.1" });

    expect((await remove("/upack/main/delete/del-a/2.0.0-rc.1")).statusCode).toBe(200);
    expect((await remove("/upack/main/delete/del-a/1.0.0")).statusCode).toBe(200);
    expect(await packageRow("del-a")).toBeUndefined();
    // Nothing references the file any more: it is deleted.
    if (deletesUnusedFilesAtOnce) expect(await blobExists(one.sha256)).toBe(false);
  });

  it("POST works too, and the group may come raw or as %2F (ProGetAutomation escapes it)", async () => {
    await upload({ group: "a/b", name: "del-b", version: "1.0.0" });
    await upload({ group: "a/b", name: "del-b", version: "1.0.1" });
    expect((await remove("/upack/main/delete/a%2Fb/del-b/1.0.0", admin, "POST")).statusCode).toBe(200);
    expect((await remove("/upack/main/delete/a/b/del-b/1.0.1")).statusCode).toBe(200);
    expect(await packageRow("del-b")).toBeUndefined();
  });

  it("matches group, name and version case-insensitively, build metadata included", async () => {
    await upload({ group: "Team", name: "Del-C", version: "1.0.0-Beta+Build.7" });
    expect((await remove("/upack/main/delete/team/del-c/1.0.0-beta+build.7")).statusCode).toBe(200);
    expect(await packageRow("del-c")).toBeUndefined();
  });

  it("keeps a file that another feed still uses", async () => {
    const spec = { name: "del-d", version: "1.0.0" };
    const first = await upload(spec, "main");
    const second = await upload(spec, "second");
    expect(second.sha256).toBe(first.sha256);
    expect((await remove("/upack/main/delete/del-d/1.0.0")).statusCode).toBe(200);
    expect(await blobExists(first.sha256)).toBe(true);
    expect((await remove("/upack/second/delete/del-d/1.0.0")).statusCode).toBe(200);
    if (deletesUnusedFilesAtOnce) expect(await blobExists(first.sha256)).toBe(false);
  });

  it("a missing version or package: 404 'package was not found'", async () => {
    await upload({ name: "del-e", version: "1.0.0" });
    expectText(await remove("/upack/main/delete/del-e/9.9.9"), 404, "package was not found");
    expectText(await remove("/upack/main/delete/no-such/1.0.0"), 404, "package was not found");
    expectText(await remove("/upack/main/delete/g/del-e/1.0.0"), 404, "package was not found");
    expectText(await remove("/upack/nope/delete/del-e/1.0.0"), 404, "feed not found");
  });

  it.each([
    ["no version", "/upack/main/delete/del-e", /no version/],
    ["an invalid version", "/upack/main/delete/del-e/1.0", /version '1\.0'/],
    ["an invalid name", "/upack/main/delete/bad%20name/1.0.0", /package name/],
    ["an invalid group", "/upack/main/delete/a%2F%2Fb/del-e/1.0.0", /group/],
  ])("%s: 400", async (_name, url, message) => {
    expectText(await remove(url), 400, message);
  });
});

describe("delete privileges (docs/compat.md 2.14: Feeds_DeletePackage; feed keys need Overwrite/Delete)", () => {
  beforeAll(async () => {
    await upload({ name: "guarded", version: "1.0.0" });
  });
  const url = "/upack/main/delete/guarded/1.0.0";

  it("anonymous: 401 with a challenge", async () => {
    const res = await remove(url, {});
    expectText(res, 401);
    expect(res.headers["www-authenticate"]).toMatch(/^Basic /);
  });

  it("view/add feed keys, a delete key of another feed and a user without the privilege: 403", async () => {
    for (const key of [
      await createFeedKey(t.database, "main", ["view", "add"]),
      await createFeedKey(t.database, "second", ["delete"]),
    ]) {
      expectText(await remove(url, { "x-apikey": key }), 403, PERMISSION_DENIED_MESSAGE);
    }
    const bob = await createUser(t.database, "bob-delete", "pw-bob");
    await grant(t.database, { user: bob, attributes: ["Feeds_ViewFeed", "Feeds_AddPackage"], feed: "main" });
    expectText(await remove(url, basic("bob-delete", "pw-bob")), 403);
    expect(await packageRow("guarded")).toBeDefined();
  });

  it("a user granted Feeds_DeletePackage deletes; so does a feed key with Overwrite/Delete", async () => {
    const carol = await createUser(t.database, "carol-delete", "pw-carol");
    await grant(t.database, { user: carol, attributes: ["Feeds_DeletePackage"], feed: "main" });
    expect((await remove(url, basic("carol-delete", "pw-carol"))).statusCode).toBe(200);

    await upload({ name: "guarded", version: "1.0.0" });
    expect((await remove(url, { "x-apikey": await createFeedKey(t.database, "main", ["delete"]) })).statusCode).toBe(
      200,
    );
    expect(await packageRow("guarded")).toBeUndefined();
  });
});
