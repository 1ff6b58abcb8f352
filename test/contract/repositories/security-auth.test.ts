import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AuthRepository, createAuthRepository } from "../../../src/areas/security/auth-repository.js";
import { createPostgresAuthRepository } from "../../../src/areas/security/auth-repository-postgres.js";
import type { Grant } from "../../../src/domain/access.js";
import { PostgresChangeWatch } from "../../../src/storage/postgres/change-feed.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { insertFeed, insertGroup, insertUser } from "../../helpers/seed-rows.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const USED = "2026-11-29T11:00:00.000Z";

/** Grants come in no particular order (access checks do not depend on it). */
const sorted = (grants: Grant[]) => [...grants].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describeOnBothDatabases("Authentication repository", (database) => {
  let auth: AuthRepository;
  /** On PostgreSQL: the node's change watch, listening as a node does, and the tables it heard of. */
  let watch: PostgresChangeWatch | undefined;
  const heard: string[] = [];
  let ids: { ann: number; bob: number; ops: number; feed: number; system: number; feedKey: number; personal: number };
  const insertId = async (sql: string, params: readonly unknown[] = []) =>
    ((await database().exec(`${sql} RETURNING id`, params)) as [{ id: number }])[0].id;
  const taskId = async (name: string) =>
    ((await database().exec("SELECT id FROM tasks WHERE name_key = ?", [name])) as [{ id: number }])[0].id;

  /**
   * Once every write committed so far has reached the watch (PostgreSQL: a NOTIFY of our own sent
   * after them arrived, notifications keep commit order); at once on SQLite.
   */
  async function settled(): Promise<void> {
    if (watch === undefined) return;
    const marker = `marker-${heard.length}-${Math.random()}`;
    await database().exec("SELECT pg_notify('wharf_changes', ?)", [marker]);
    while (!heard.includes(marker)) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  beforeAll(async () => {
    const db: TestDatabase = database();
    if (db.kind === "sqlite") auth = createAuthRepository(db.sqlite);
    else {
      watch = new PostgresChangeWatch({
        url: db.postgres.pool.options.connectionString as string,
        applicationName: "wharf test, change watch",
      });
      await watch.start();
      watch.onChange((table) => heard.push(table));
      auth = createPostgresAuthRepository(db.postgres, watch);
    }
    const ann = await insertUser(db.exec, "Ann", CREATED, "scrypt$hash");
    const bob = await insertUser(db.exec, "Bob", CREATED);
    const ops = await insertGroup(db.exec, "Ops");
    await database().exec("INSERT INTO group_members (group_id, user_id) VALUES (?, ?)", [ops, ann]);
    const feed = await insertFeed(db.exec, "main", CREATED);
    const system = await insertId(
      `INSERT INTO api_keys (key_hash, key_type, display_name, system_apis, logging, created_at)
       VALUES ('hash-system', 'System', 'CI', '["feeds","security"]', 'Request', ?)`,
      [CREATED],
    );
    const feedKey = await insertId(
      `INSERT INTO api_keys (key_hash, key_type, package_permissions, feed_id, expires_at, created_at)
       VALUES ('hash-feed', 'Feed', '["view","add"]', ?, '2027-01-01T00:00:00.000Z', ?)`,
      [feed, CREATED],
    );
    const personal = await insertId(
      "INSERT INTO api_keys (key_hash, key_type, feed_group, user_id, created_at) VALUES ('hash-personal', 'Personal', 'team', ?, ?)",
      [ann, CREATED],
    );
    ids = { ann, bob, ops, feed, system, feedKey, personal };
    const view = await taskId("view & download packages");
    const publish = await taskId("publish packages");
    const grant =
      "INSERT INTO permissions (principal_type, user_id, group_id, task_id, feed_id, feed_group_key, feed_group, deny) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    await database().exec(grant, ["anonymous", null, null, view, feed, null, null, 0]);
    await database().exec(grant, ["user", ann, null, publish, null, "team-a", "Team-A", 0]);
    await database().exec(grant, ["group", null, ops, view, null, null, null, 1]);
    await database().exec(grant, ["user", bob, null, publish, null, null, null, 0]);
  });
  afterAll(async () => {
    await watch?.close();
  });

  it("finds each kind of key by its hash, as authentication uses it", async () => {
    expect(await auth.findKeyByHash("hash-system")).toEqual({
      id: ids.system,
      type: "System",
      systemApis: ["feeds", "security"],
      packagePermissions: [],
      feedId: undefined,
      feedGroup: undefined,
      userId: undefined,
      userName: undefined,
      expiresAt: undefined,
      lastUsedAt: undefined,
      displayName: "CI",
    });
    expect(await auth.findKeyByHash("hash-feed")).toEqual({
      id: ids.feedKey,
      type: "Feed",
      systemApis: [],
      packagePermissions: ["view", "add"],
      feedId: ids.feed,
      feedGroup: undefined,
      userId: undefined,
      userName: undefined,
      expiresAt: "2027-01-01T00:00:00.000Z",
      lastUsedAt: undefined,
      displayName: undefined,
    });
    expect(await auth.findKeyByHash("hash-personal")).toEqual({
      id: ids.personal,
      type: "Personal",
      systemApis: [],
      packagePermissions: [],
      feedId: undefined,
      feedGroup: "team",
      userId: ids.ann,
      userName: "Ann",
      expiresAt: undefined,
      lastUsedAt: undefined,
      displayName: undefined,
    });
    expect(await auth.findKeyByHash("HASH-SYSTEM")).toBeUndefined();
    expect(await auth.findKeyByHash("unknown")).toBeUndefined();
  });

  it("finds a login by user name, case-insensitively", async () => {
    expect(await auth.findLogin("ANN")).toEqual({ id: ids.ann, name: "Ann", passwordHash: "scrypt$hash" });
    expect(await auth.findLogin("bob")).toEqual({ id: ids.bob, name: "Bob", passwordHash: undefined });
    expect(await auth.findLogin("nobody")).toBeUndefined();
  });

  it("gives a user's own grants, its groups' and Anonymous's; with no user, Anonymous's alone", async () => {
    const view = ["Feeds_ViewFeed", "Feeds_DownloadPackage"];
    const anonymous: Grant = { attributes: view, feedId: ids.feed, feedGroup: undefined, deny: false };
    const publish = (await database().exec("SELECT attributes FROM tasks WHERE name_key = 'publish packages'"))[0];
    const published = JSON.parse(String(publish?.["attributes"])) as string[];
    expect(sorted(await auth.grantsFor(ids.ann))).toEqual(
      sorted([
        anonymous,
        { attributes: published, feedId: undefined, feedGroup: "team-a", deny: false },
        { attributes: view, feedId: undefined, feedGroup: undefined, deny: true },
      ]),
    );
    expect(sorted(await auth.grantsFor(ids.bob))).toEqual(
      sorted([anonymous, { attributes: published, feedId: undefined, feedGroup: undefined, deny: false }]),
    );
    expect(await auth.grantsFor(undefined)).toEqual([anonymous]);
    expect(await auth.grantsFor(999_999)).toEqual([anonymous]);
  });

  it("stamps a key's last use without moving the generation; any other write moves it", async () => {
    const db = database();
    await settled();
    heard.length = 0; // the fixtures' own writes
    const commits = db.kind === "postgres" ? db.commits() : 0;
    const before = auth.generation();
    expect(auth.generation()).toBe(before);
    await auth.touchKey(ids.system, USED);
    await auth.touchKey(999_999, USED);
    // On PostgreSQL, the marker that shows every notification arrived moves the generation too:
    // what shows the stamp quiet is that nobody heard of api_keys, and that this node was not told.
    if (db.kind === "sqlite") expect(auth.generation()).toBe(before);
    else {
      await settled();
      expect(heard).not.toContain("api_keys");
      expect(db.commits()).toBe(commits);
    }
    expect((await auth.findKeyByHash("hash-system"))?.lastUsedAt).toBe(USED);

    const unchanged = auth.generation();
    await database().exec("UPDATE api_keys SET display_name = 'CI 2' WHERE id = ?", [ids.system]);
    while (watch !== undefined && !heard.includes("api_keys")) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(auth.generation()).not.toBe(unchanged);
  });

  it("skips a last-use stamp rather than wait for a key row another transaction holds (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const holder = new pg.Client({ connectionString: db.postgres.pool.options.connectionString as string });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT id FROM api_keys WHERE id = $1 FOR UPDATE", [ids.feedKey]);
      const waited = new Promise<never>((_, reject) => {
        setTimeout(() => reject(new Error("touchKey waited for the lock")), 2_000).unref();
      });
      await Promise.race([auth.touchKey(ids.feedKey, USED), waited]);
      expect((await auth.findKeyByHash("hash-feed"))?.lastUsedAt).toBeUndefined();
      await holder.query("ROLLBACK");
      await auth.touchKey(ids.feedKey, USED);
      expect((await auth.findKeyByHash("hash-feed"))?.lastUsedAt).toBe(USED);
    } finally {
      await holder.end();
    }
  });
});
