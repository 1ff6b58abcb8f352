import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import type { LightMyRequestResponse } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { hashApiKey } from "../../src/areas/security/api-key-hash.js";
import { loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { type Db, MIGRATIONS_DIR, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { basic, createFeedKey, createUser, feedIdOf, grant, newKey, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { expectJson, expectText } from "../helpers/responses.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * Issue 11, section 1: keys, permissions and connector references are bound to what they were
 * made for (a feed's or connector's id), never to a name that a later feed or connector may take.
 * Each story builds its own app, so that the refused keys of one do not count against another.
 */

const FEEDS = "/api/management/feeds";
const CONNECTORS = "/api/management/connectors";
const PASSWORD = "a-long-enough-password-7";

let t: TestApp;
afterEach(async () => {
  const closing = t;
  t = undefined as unknown as TestApp;
  await closing?.close();
});

type Headers = Record<string, string>;
const admin = (): Headers => ({ "x-apikey": t.adminKey });
const byKey = (key: string): Headers => ({ "x-apikey": key });

async function call(headers: Headers, method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: object) {
  return t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
}
const createFeed = async (name: string, extra: object = {}) =>
  expectJson(await call(admin(), "POST", `${FEEDS}/create`, { name, feedType: "universal", ...extra }), 201);
const renameFeed = async (from: string, to: string) =>
  expectJson(await call(admin(), "POST", `${FEEDS}/update/${from}`, { name: to }), 200);
const deleteFeed = async (name: string) =>
  expect((await call(admin(), "DELETE", `${FEEDS}/delete/${name}`)).statusCode).toBe(200);
const feedConnectors = async (name: string) =>
  (expectJson(await call(admin(), "GET", `${FEEDS}/get/${name}`), 200) as { connectors: string[] }).connectors;

/** A feed key made through the API, as an operator would. */
async function apiFeedKey(feed: string, packagePermissions: string[]): Promise<string> {
  const body = { type: "Feed", feed, packagePermissions };
  return (expectJson(await call(admin(), "POST", "/api/api-keys/create", body), 201) as { key: string }).key;
}
const listKeys = async () =>
  expectJson(await call(admin(), "GET", "/api/api-keys/list"), 200) as { id: number; feed?: string }[];

/** Reads the feed's package list and uploads a new version: the statuses of both. */
async function readAndWrite(headers: Headers, feed: string, version: string): Promise<[number, number]> {
  const read = await call(headers, "GET", `/upack/${feed}/packages`);
  const bytes = await buildUpack({ name: "tool", version });
  const write = await t.app.inject({
    method: "PUT",
    url: `/upack/${feed}/upload`,
    headers: { ...headers, "content-type": "application/zip" },
    payload: bytes,
  });
  return [read.statusCode, write.statusCode];
}

const refused = (res: LightMyRequestResponse) => expectText(res, 403, "does not have the proper permissions");

/**
 * A delete by another process. On SQLite one that does not enforce foreign keys (a sqlite3 shell,
 * by default): SQLite then gives the next new row the deleted one's id, so nothing may be left
 * bound to it. On PostgreSQL every client's delete follows the foreign keys, and no id comes back.
 */
async function deleteFromShell(sql: string): Promise<void> {
  if (testsRunOnPostgres()) return writeFromOutside(t, sql);
  const other = new Database(path.join(t.dataDir, "wharf.sqlite"));
  try {
    other.pragma("foreign_keys = OFF");
    other.prepare(sql).run();
  } finally {
    other.close();
  }
}

/** SQLite's reuse of a deleted row's id, which the stories above guard against: not PostgreSQL's. */
const idsComeBack = !testsRunOnPostgres();

describe("feed keys are bound to their feed, not its name", () => {
  it("a feed key dies with its feed and opens no feed recreated under the same name (read and write)", async () => {
    t = await buildTestApp();
    await createFeed("ci");
    const key = await apiFeedKey("ci", ["view", "add"]);
    expect(await readAndWrite(byKey(key), "ci", "1.0.0")).toEqual([200, 201]);

    await deleteFeed("ci");
    expect((await listKeys()).map((k) => k.feed)).not.toContain("ci");
    await createFeed("ci");
    expect(await readAndWrite(byKey(key), "ci", "2.0.0")).toEqual([403, 403]);
    refused(await call(byKey(key), "GET", `/upack/ci/packages`));
    // The other team's feed stays untouched by the old key.
    const packages = expectJson(await call(admin(), "GET", "/upack/ci/packages"), 200);
    expect(packages).toEqual([]);
  });

  it("a feed deleted outside Wharf takes its keys along, even where a new feed gets its id", async () => {
    t = await buildTestApp();
    await createFeed("newest");
    const key = await apiFeedKey("newest", ["view"]);
    const id = await feedIdOf(t.database, "newest");
    await deleteFromShell("DELETE FROM feeds WHERE name = 'newest'");
    await createFeed("newest");
    if (idsComeBack) expect(await feedIdOf(t.database, "newest")).toBe(id);
    refused(await call(byKey(key), "GET", "/upack/newest/packages"));
  });

  it("after a rename the key works on the renamed feed, and not on a new feed that takes the old name", async () => {
    t = await buildTestApp();
    await createFeed("team-a");
    const key = await apiFeedKey("team-a", ["view", "add"]);
    await renameFeed("team-a", "team-b");

    expect(await readAndWrite(byKey(key), "team-b", "1.0.0")).toEqual([200, 201]);
    const listed = (await listKeys()).find((k) => k.feed !== undefined);
    expect(listed?.feed).toBe("team-b");

    await createFeed("team-a");
    expect(await readAndWrite(byKey(key), "team-a", "1.0.1")).toEqual([403, 403]);
    expect(await readAndWrite(byKey(key), "team-b", "1.0.2")).toEqual([200, 201]);
  });

  it("an alternate name reaches the feed the key was made for; the key made by an alternate name is the feed's", async () => {
    t = await buildTestApp();
    await createFeed("primary", { alternateNames: ["alias"] });
    const key = await apiFeedKey("ALIAS", ["view"]);
    expect((await listKeys()).find((k) => k.feed !== undefined)?.feed).toBe("primary");
    expectJson(await call(byKey(key), "GET", "/upack/primary/packages"), 200);
    expectJson(await call(byKey(key), "GET", "/upack/alias/packages"), 200);
  });

  it("an asset directory's key dies with it and opens no directory recreated under its name", async () => {
    t = await buildTestApp();
    const createDirectory = async () =>
      expectJson(await call(admin(), "POST", `${FEEDS}/create`, { name: "site", feedType: "asset" }), 201);
    await createDirectory();
    const key = await apiFeedKey("site", ["view", "add"]);
    const put = (body: string) =>
      t.app.inject({ method: "PUT", url: "/endpoints/site/content/a.txt", headers: byKey(key), payload: body });
    expect((await put("first")).statusCode).toBe(201);
    expect((await call(byKey(key), "GET", "/endpoints/site/content/a.txt")).body).toBe("first");

    await deleteFeed("site");
    await createDirectory();
    refused(await put("second"));
    refused(await call(byKey(key), "GET", "/endpoints/site/content/a.txt"));
  });
});

describe("permissions are bound to their feed, not its name", () => {
  it("a user's feed permission follows a rename, opens no new feed under the old name, and dies with its feed", async () => {
    t = await buildTestApp();
    await createUser(t.database, "alice", PASSWORD);
    await createFeed("pkgs");
    const granted = await call(admin(), "POST", "/api/security/permissions/add", {
      user: "alice",
      task: "Publish Packages",
      feed: "pkgs",
    });
    expectJson(granted, 200);
    const alice = basic("alice", PASSWORD);
    expect(await readAndWrite(alice, "pkgs", "1.0.0")).toEqual([200, 201]);

    await renameFeed("pkgs", "pkgs-renamed");
    expect(await readAndWrite(alice, "pkgs-renamed", "1.0.1")).toEqual([200, 201]);
    const permissions = async () =>
      expectJson(await call(admin(), "GET", "/api/security/permissions/list"), 200) as { feed?: string }[];
    expect((await permissions()).map((p) => p.feed)).toEqual(["pkgs-renamed"]);

    await createFeed("pkgs");
    expect(await readAndWrite(alice, "pkgs", "1.0.2")).toEqual([403, 403]);

    await deleteFeed("pkgs-renamed");
    expect(await permissions()).toEqual([]);
    await createFeed("pkgs-renamed");
    expect(await readAndWrite(alice, "pkgs-renamed", "1.0.3")).toEqual([403, 403]);
  });

  it("a group's feed permission (written as before, through the fixtures) is the feed's too", async () => {
    t = await buildTestApp();
    await createFeed("shared");
    const userId = await createUser(t.database, "bob", PASSWORD);
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "shared" });
    expectJson(await call(basic("bob", PASSWORD), "GET", `${FEEDS}/get/shared`), 200);
    await deleteFeed("shared");
    await createFeed("shared");
    expectText(await call(basic("bob", PASSWORD), "GET", `${FEEDS}/get/shared`), 403);
  });
});

describe("personal keys are bound to their user", () => {
  it("a personal key dies with its user and does not act for a user recreated under the same name", async () => {
    t = await buildTestApp();
    await createFeed("mine");
    const addUser = async () =>
      expectJson(await call(admin(), "POST", "/api/security/users/add", { name: "carol", password: PASSWORD }), 200);
    await addUser();
    expectJson(
      await call(admin(), "POST", "/api/security/permissions/add", { user: "carol", task: "Administer" }),
      200,
    );
    const created = await call(admin(), "POST", "/api/api-keys/create", { type: "Personal", user: "carol" });
    const key = (expectJson(created, 201) as { key: string }).key;
    expectJson(await call(byKey(key), "GET", `${FEEDS}/get/mine`), 200);

    expect((await call(admin(), "DELETE", "/api/security/users/delete?user=carol")).statusCode).toBe(200);
    expect(await readOne(t.database, "SELECT count(*) AS n FROM api_keys WHERE key_type = 'Personal'")).toEqual({
      n: 0,
    });
    await addUser();
    expectJson(
      await call(admin(), "POST", "/api/security/permissions/add", { user: "carol", task: "Administer" }),
      200,
    );
    refused(await call(byKey(key), "GET", `${FEEDS}/get/mine`));
  });
});

describe("connectors: bound to feeds by id, and their stored credentials lent only by those who manage connectors", () => {
  const connector = (name: string, extra: object = {}) => ({
    name,
    url: "https://upstream.example.com/upack/public",
    feedType: "universal",
    ...extra,
  });
  const createConnector = async (name: string, extra: object = {}) =>
    expectJson(await call(admin(), "POST", `${CONNECTORS}/create`, connector(name, extra)), 201);

  it("a feed manager cannot attach a connector with stored credentials; an administrator can, and the manager keeps it", async () => {
    t = await buildTestApp();
    await createFeed("proxy");
    await createConnector("secret", { username: "svc", password: "upstream-secret" });
    await createConnector("token", { username: "a-token-as-user-name" });
    await createConnector("open");
    const managerId = await createUser(t.database, "manager", PASSWORD);
    await grant(t.database, { user: managerId, attributes: ["Admin_ManageFeed", "Feeds_ViewFeed"], feed: "proxy" });
    const manager = basic("manager", PASSWORD);
    const update = (headers: Headers, body: object) => call(headers, "POST", `${FEEDS}/update/proxy`, body);

    for (const name of ["secret", "token"]) {
      const res = await update(manager, { connectors: ["open", name] });
      expectText(res, 403, `connector '${name}' uses stored credentials`, "manage connectors");
      expect(res.headers["x-wharf-error"]).toBe("CONNECTOR_CREDENTIALS_FORBIDDEN");
    }
    expect(await feedConnectors("proxy")).toEqual([]);
    expectJson(await update(manager, { connectors: ["open"] }), 200);

    // Whoever may manage connectors may lend their credentials: an administrator, a feeds System key.
    const feedsKey = (
      expectJson(
        await call(admin(), "POST", "/api/api-keys/create", { type: "System", systemApis: ["feeds"] }),
        201,
      ) as { key: string }
    ).key;
    expectJson(await update(byKey(feedsKey), { connectors: ["open", "secret"] }), 200);
    expectJson(await update(admin(), { connectors: ["open", "secret", "token"] }), 200);

    // The manager can still send the feed back with its connectors, reorder or drop them...
    expectJson(await update(manager, { connectors: ["token", "secret", "open"], description: "x" }), 200);
    expectJson(await update(manager, { connectors: ["open"] }), 200);
    // ...but not put a dropped one back.
    expectText(await update(manager, { connectors: ["open", "secret"] }), 403, "stored credentials");
    expect(await feedConnectors("proxy")).toEqual(["open"]);
  });

  it("a connector deleted and recreated under its name is not the feed's; a renamed one still is", async () => {
    t = await buildTestApp();
    await createConnector("kept");
    await createConnector("up");
    await createFeed("proxy", { connectors: ["up", "kept"] });
    expect(await feedConnectors("proxy")).toEqual(["up", "kept"]);

    // Deleted behind the API's back (another process, or a delete racing a feed update); the
    // recreated connector even gets the deleted one's id.
    const connectorId = async () =>
      (await readOne<{ id: number }>(t.database, "SELECT id FROM connectors WHERE name_key = 'up'"))?.id;
    const id = await connectorId();
    await deleteFromShell("DELETE FROM connectors WHERE name_key = 'up'");
    await createConnector("up", { username: "svc", password: "someone-else" });
    if (idsComeBack) expect(await connectorId()).toBe(id);
    expect(await feedConnectors("proxy")).toEqual(["kept"]);

    expectJson(await call(admin(), "POST", `${CONNECTORS}/update/kept`, { name: "renamed" }), 200);
    await createConnector("kept");
    expect(await feedConnectors("proxy")).toEqual(["renamed"]);
    expectText(await call(admin(), "DELETE", `${CONNECTORS}/delete/renamed`), 409, "'proxy'");
  });
});

describe("feed groups are labels: putting a feed under one, or taking it out, needs the right on that group", () => {
  it("a manager of one feed cannot label it (a group key would reach it) nor unlabel it (escaping a group deny)", async () => {
    t = await buildTestApp();
    await createFeed("mine");
    await createFeed("labelled", { feedGroup: "prod" });
    const groupKey = await createFeedKey(t.database, { group: "prod" }, ["view"]);
    const userId = await createUser(t.database, "dana", PASSWORD);
    for (const feed of ["mine", "labelled"]) {
      await grant(t.database, { user: userId, attributes: ["Admin_ManageFeed", "Feeds_ViewFeed"], feed });
    }
    const dana = basic("dana", PASSWORD);

    for (const [feed, feedGroup] of [
      ["mine", "prod"],
      ["labelled", null],
      ["labelled", "dev"],
    ] as const) {
      const res = await call(dana, "POST", `${FEEDS}/update/${feed}`, { feedGroup });
      expectText(res, 403, "feed group 'prod'", "manage that group's feeds");
      expect(res.headers["x-wharf-error"]).toBe("FEED_GROUP_FORBIDDEN");
    }
    refused(await call(byKey(groupKey), "GET", "/upack/mine/packages"));
    // Other changes, and sending the label back unchanged, stay the feed manager's.
    expectJson(await call(dana, "POST", `${FEEDS}/update/labelled`, { feedGroup: "PROD", description: "d" }), 200);

    // With the right on the group, the same change passes, and the group's key reaches the feed.
    await grant(t.database, { user: userId, attributes: ["Admin_ManageFeed"], feedGroup: "prod" });
    expectJson(await call(dana, "POST", `${FEEDS}/update/mine`, { feedGroup: "prod" }), 200);
    expectJson(await call(byKey(groupKey), "GET", "/upack/mine/packages"), 200);
  });
});

// SQLite's own migration of an old data directory; PostgreSQL's schema starts after it (0001-baseline).
describe.skipIf(testsRunOnPostgres())(
  "migration 0010 binds name-bound keys and permissions to ids and drops the orphans",
  () => {
    it("an old database: the key of a live feed still works, the orphaned key and permission are gone", async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "wharf-migration-"));
      try {
        const file = path.join(dataDir, "wharf.sqlite");
        const oldMigrations = path.join(dataDir, "migrations-0009");
        fs.mkdirSync(oldMigrations);
        for (const name of fs.readdirSync(MIGRATIONS_DIR).filter((f) => /^000\d-/.test(f))) {
          fs.copyFileSync(path.join(MIGRATIONS_DIR, name), path.join(oldMigrations, name));
        }
        const boundKey = newKey("bound");
        const orphanKey = newKey("orphan");
        const old = openDatabase(file, oldMigrations);
        expect(old.pragma("user_version", { simple: true })).toBe(9);
        const now = new Date().toISOString();
        const feed = (id: number, name: string, settings: object) => {
          old
            .prepare(
              `INSERT INTO feeds (id, name, feed_type, storage_key, settings, created_at, modified_at)
             VALUES (?, ?, 'universal', ?, ?, ?, ?)`,
            )
            .run(id, name, `storage-${id}`, JSON.stringify(settings), now, now);
          old
            .prepare("INSERT INTO feed_names (name_key, feed_id, is_primary, name) VALUES (?, ?, 1, ?)")
            .run(name.toLowerCase(), id, name);
        };
        old
          .prepare(
            `INSERT INTO connectors (id, name, name_key, url, feed_type, settings, created_at, modified_at)
           VALUES (7, 'Up', 'up', 'https://upstream.example.com/upack/x', 'universal', '{}', ?, ?)`,
          )
          .run(now, now);
        feed(1, "Live", { description: "kept", connectors: ["up", "ghost"] });
        const key = old.prepare(
          `INSERT INTO api_keys (key_hash, key_type, package_permissions, feed_name, created_at)
         VALUES (?, 'Feed', '["view"]', ?, ?)`,
        );
        key.run(hashApiKey(boundKey), "live", now);
        key.run(hashApiKey(orphanKey), "Deleted-Feed", now);
        old.prepare("INSERT INTO users (id, name, name_key, created_at) VALUES (5, 'erin', 'erin', ?)").run(now);
        const permission = old.prepare(
          `INSERT INTO permissions (principal_type, user_id, task_id, feed_name_key, feed_name, deny)
         VALUES ('user', 5, (SELECT id FROM tasks WHERE name_key = 'view & download packages'), ?, ?, 0)`,
        );
        permission.run("live", "Live");
        permission.run("deleted-feed", "Deleted-Feed");
        old.close();

        const db = openDatabase(file);
        expect(db.prepare("SELECT feed_id, feed_name FROM api_keys ORDER BY id").all()).toEqual([
          { feed_id: 1, feed_name: null },
        ]);
        expect(db.prepare("SELECT feed_id, feed_name_key FROM permissions ORDER BY id").all()).toEqual([
          { feed_id: 1, feed_name_key: null },
        ]);
        expect(db.prepare("SELECT feed_id, connector_id FROM feed_connectors").all()).toEqual([
          { feed_id: 1, connector_id: 7 },
        ]);
        expect(JSON.parse(db.prepare<[], string>("SELECT settings FROM feeds").pluck().get() ?? "{}")).toEqual({
          description: "kept",
        });

        const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent" });
        const app = await buildApp(config, {
          db,
          blobs: createFileBlobStore(dataDir),
          clock: systemClock,
          logger: false,
        });
        try {
          expect((await app.inject({ url: `${FEEDS}/get/Live`, headers: byKey(boundKey) })).statusCode).toBe(200);
          expect((await app.inject({ url: `${FEEDS}/get/Live`, headers: byKey(orphanKey) })).statusCode).toBe(403);
          const adminHeaders = { "x-apikey": createAdminKey(db) };
          const live = await app.inject({ url: `${FEEDS}/get/live`, headers: adminHeaders });
          expect((expectJson(live, 200) as { connectors: string[] }).connectors).toEqual(["Up"]);
          // A feed created now under the orphans' name does not wake them up.
          const created = await app.inject({
            method: "POST",
            url: `${FEEDS}/create`,
            headers: adminHeaders,
            payload: { name: "Deleted-Feed", feedType: "universal" },
          });
          expect(created.statusCode).toBe(201);
          const orphanRead = await app.inject({ url: `${FEEDS}/get/Deleted-Feed`, headers: byKey(orphanKey) });
          expect(orphanRead.statusCode).toBe(403);
          expect(await feedIdOf(db, "deleted-feed")).toBeGreaterThan(1);
          expect(db.prepare("SELECT count(*) AS n FROM permissions WHERE feed_id IS NOT NULL").get()).toEqual({ n: 1 });
        } finally {
          await app.close();
          db.close();
        }
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
  },
);

/** A full-control System key written straight into the database. */
function createAdminKey(db: Db): string {
  const key = newKey("admin");
  db.prepare(
    `INSERT INTO api_keys (key_hash, key_type, system_apis, created_at) VALUES (?, 'System', '["full-control"]', ?)`,
  ).run(hashApiKey(key), new Date().toISOString());
  return key;
}
