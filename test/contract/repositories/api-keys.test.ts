import { beforeAll, expect, it } from "vitest";
import { createApiKeyRepository, type NewApiKey } from "../../../src/areas/security/api-key-repository.js";
import { createPostgresApiKeyRepository } from "../../../src/areas/security/api-key-repository-postgres.js";
import type { ApiKeyRepository } from "../../../src/areas/security/api-key-repository.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { insertFeed, insertUser } from "../../helpers/seed-rows.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const key = (hash: string, fields: Partial<NewApiKey> = {}): NewApiKey => ({
  keyHash: hash,
  type: "System",
  displayName: undefined,
  description: undefined,
  systemApis: ["feeds"],
  packagePermissions: undefined,
  feedId: undefined,
  feedGroup: undefined,
  userId: undefined,
  logging: "None",
  expiresAt: undefined,
  createdAt: CREATED,
  ...fields,
});

const repositoryOn = (database: TestDatabase): ApiKeyRepository =>
  database.kind === "sqlite"
    ? createApiKeyRepository(database.sqlite)
    : createPostgresApiKeyRepository(database.postgres);

describeOnBothDatabases("API key repository", (database) => {
  let keys: ApiKeyRepository;
  let userId: number;
  let feedId: number;
  beforeAll(async () => {
    keys = repositoryOn(database());
    const { exec } = database();
    userId = await insertUser(exec, "Ann", CREATED);
    feedId = await insertFeed(exec, "main", CREATED);
  });

  it("stores each kind of key and shows it as the API does", async () => {
    const system = await keys.insert(key("a".repeat(64), { displayName: "CI", logging: "Request" }));
    const feed = await keys.insert(
      key("b".repeat(64), { type: "Feed", systemApis: undefined, packagePermissions: ["view", "add"], feedId }),
    );
    const personal = await keys.insert(
      key("c".repeat(64), { type: "Personal", systemApis: undefined, userId, expiresAt: "2027-01-01T00:00:00.000Z" }),
    );
    expect(system).toEqual({
      id: system.id,
      type: "System",
      displayName: "CI",
      systemApis: ["feeds"],
      logging: "Request",
    });
    expect(feed).toEqual({
      id: feed.id,
      type: "Feed",
      packagePermissions: ["view", "add"],
      feed: "main",
      logging: "None",
    });
    expect(personal).toEqual({
      id: personal.id,
      type: "Personal",
      user: "Ann",
      expiration: "2027-01-01T00:00:00.000Z",
      logging: "None",
    });
    expect(await keys.list()).toEqual([system, feed, personal]);
  });

  it("refuses a key whose hash is taken, and one for a feed deleted meanwhile, with the API's conflicts", async () => {
    await expect(keys.insert(key("a".repeat(64)))).rejects.toMatchObject({ kind: "conflict", code: "API_KEY_EXISTS" });
    await expect(
      keys.insert(
        key("d".repeat(64), { type: "Feed", systemApis: undefined, packagePermissions: ["view"], feedId: 999 }),
      ),
    ).rejects.toMatchObject({ kind: "conflict", code: "CONCURRENT_CHANGE" });
    expect((await keys.list()).map((view) => view.type)).toEqual(["System", "Feed", "Personal"]);
  });

  it("deletes a key once", async () => {
    const [first] = await keys.list();
    expect(await keys.delete(first?.id ?? 0)).toBe(true);
    expect(await keys.delete(first?.id ?? 0)).toBe(false);
    expect(await keys.list()).toHaveLength(2);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    await keys.insert(key("e".repeat(64)));
    await keys.delete(999_999);
    expect(db.commits()).toBe(before + 2);
  });
});
