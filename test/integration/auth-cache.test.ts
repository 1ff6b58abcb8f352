import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/areas/security/api-key-hash.js";
import type { Clock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { basic, createFeedKey, createUser, grant, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Authentication answers from memory once a key or login has been seen (authenticator.ts), so
 * these prove that the cache never outlives what it caches: every change to keys, users or
 * permissions, made through the API, by another connection or by another process, takes effect
 * on the very next request; expiry follows the clock; last-used bookkeeping writes no more than
 * it did without the cache.
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

describe("authentication caches: a change takes effect on the next request", () => {
  let t: TestApp;
  let now = Date.parse("2030-01-01T00:00:00.000Z");
  const clock: Clock = { now: () => new Date(now) };
  const download = async (headers: Record<string, string>) =>
    (await t.app.inject({ url: "/upack/main/download/pkg/1.0.0", headers })).statusCode;
  const withKey = (key: string) => download({ "x-apikey": key });
  /** Twice: the second answer comes from the cache. */
  const expectWorks = async (headers: Record<string, string>) => {
    expect(await download(headers)).toBe(200);
    expect(await download(headers)).toBe(200);
  };
  const outside = (sql: string, ...params: unknown[]) => writeFromOutside(t, sql, ...params);

  beforeAll(async () => {
    t = await buildTestApp({ clock });
    const u = createUpackFixtures(t);
    await u.createFeed("main");
    await u.createFeed("other");
    await u.addVersion("main", { name: "pkg", version: "1.0.0" });
  });
  afterAll(async () => t?.close());

  it("refuses a key deleted through the API", async () => {
    const created = await t.app.inject({
      method: "POST",
      url: "/api/api-keys/create",
      headers: { "x-apikey": t.adminKey },
      payload: { type: "Feed", feed: "main", packagePermissions: ["view"] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id, key } = created.json() as { id: number; key: string };
    await expectWorks({ "x-apikey": key });
    const deleted = await t.app.inject({
      method: "DELETE",
      url: `/api/api-keys/delete?id=${id}`,
      headers: { "x-apikey": t.adminKey },
    });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(await withKey(key)).toBe(403);
  });

  it.each([
    ["deleted", "DELETE FROM api_keys WHERE key_hash = ?"],
    ["expired", "UPDATE api_keys SET expires_at = '2020-01-01T00:00:00.000Z' WHERE key_hash = ?"],
    ["narrowed to no permission", "UPDATE api_keys SET package_permissions = '[]' WHERE key_hash = ?"],
    [
      "moved to another feed",
      "UPDATE api_keys SET feed_id = (SELECT feed_id FROM feed_names WHERE name_key = 'other') WHERE key_hash = ?",
    ],
  ])("refuses a key %s by another connection", async (_change, sql) => {
    const key = await createFeedKey(t.database, "main", ["view"]);
    await expectWorks({ "x-apikey": key });
    await outside(sql, hashApiKey(key));
    expect(await withKey(key)).toBe(403);
  });

  it("refuses a key deleted by another process", async () => {
    const key = await createFeedKey(t.database, "main", ["view"]);
    await expectWorks({ "x-apikey": key });
    // SQLite: the data directory's file. PostgreSQL: the cluster's database, as psql would.
    const script = testsRunOnPostgres()
      ? `
      import pg from "pg";
      const client = new pg.Client({ connectionString: process.argv[1] });
      await client.connect();
      await client.query("DELETE FROM api_keys WHERE key_hash = $1", [process.argv[2]]);
      await client.end();`
      : `
      import Database from "better-sqlite3";
      const db = new Database(process.argv[1]);
      db.prepare("DELETE FROM api_keys WHERE key_hash = ?").run(process.argv[2]);
      db.close();`;
    const database = t.config.databaseUrl ?? path.join(t.dataDir, "wharf.sqlite");
    await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script, database, hashApiKey(key)], {
      cwd: ROOT,
    });
    if (testsRunOnPostgres()) {
      // A cluster node hears another client's commit by notification, within the bound
      // (docs/cluster-mode.md: milliseconds; while it cannot hear, no cache answers at all).
      await expect.poll(() => withKey(key), { timeout: 5_000, interval: 20 }).toBe(403);
    } else {
      expect(await withKey(key)).toBe(403);
    }
  });

  it("refuses a cached key once the clock passes its expiry", async () => {
    const key = await createFeedKey(t.database, "main", ["view"], { expiresAt: new Date(now + 10_000).toISOString() });
    await expectWorks({ "x-apikey": key });
    now += 10_000;
    expect(await withKey(key)).toBe(403);
  });

  it("follows a user's grants, password and existence", async () => {
    const userId = await createUser(t.database, "carol", "carol-password-1");
    const login = basic("carol", "carol-password-1");
    expect(await download(login)).toBe(403);
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"], feed: "main" });
    await expectWorks(login);

    await outside("DELETE FROM permissions WHERE user_id = ?", userId);
    expect(await download(login)).toBe(403);
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"], feed: "main" });
    await expectWorks(login);

    const edit = await t.app.inject({
      method: "POST",
      url: "/api/security/users/edit",
      headers: { "x-apikey": t.adminKey },
      payload: { name: "carol", password: "carol-password-2" },
    });
    expect(edit.statusCode, edit.body).toBe(200);
    expect(await download(login)).toBe(403);
    await expectWorks(basic("carol", "carol-password-2"));

    const removed = await t.app.inject({
      method: "DELETE",
      url: "/api/security/users/delete?user=carol",
      headers: { "x-apikey": t.adminKey },
    });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(await download(basic("carol", "carol-password-2"))).toBe(403);
  });

  it("writes a key's last-used time at most once a minute, as without the cache", async () => {
    const key = await createFeedKey(t.database, "main", ["view"]);
    const lastUsed = async () =>
      (
        await readOne<{ last_used_at: string | null }>(
          t.database,
          "SELECT last_used_at FROM api_keys WHERE key_hash = ?",
          hashApiKey(key),
        )
      )?.last_used_at;
    const first = new Date(now).toISOString();
    await expectWorks({ "x-apikey": key });
    expect(await lastUsed()).toBe(first);
    now += 30_000;
    await expectWorks({ "x-apikey": key });
    expect(await lastUsed()).toBe(first);
    now += 31_000;
    await expectWorks({ "x-apikey": key });
    expect(await lastUsed()).toBe(new Date(now).toISOString());
  });
});
