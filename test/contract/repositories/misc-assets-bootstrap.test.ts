import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeAll, expect, it } from "vitest";
import { assetDownloadTimesOf } from "../../../src/areas/endpoints/download-times.js";
import { postgresAssetDownloadTimesOf } from "../../../src/areas/endpoints/download-times-postgres.js";
import { type AssetRetentionRows, createAssetRetentionRows } from "../../../src/areas/retention/asset-candidates.js";
import { createPostgresAssetRetentionRows } from "../../../src/areas/retention/asset-candidates-postgres.js";
import { hashApiKey } from "../../../src/areas/security/api-key-hash.js";
import { bootstrapAdminKey } from "../../../src/areas/security/bootstrap.js";
import { bootstrapPostgresAdminKey } from "../../../src/areas/security/bootstrap-postgres.js";
import { dataPaths } from "../../../src/storage/data-paths.js";
import { openPostgres } from "../../../src/storage/postgres/connection.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";

const T0 = "2026-11-29T10:00:00.000Z";
const sha = (c: string) => c.repeat(64);
const clock = { now: () => new Date(T0) };

const rowsOn = (database: TestDatabase): AssetRetentionRows =>
  database.kind === "sqlite"
    ? createAssetRetentionRows(database.sqlite)
    : createPostgresAssetRetentionRows(database.postgres);
const timesOn = (database: TestDatabase) => {
  if (database.kind === "postgres") return postgresAssetDownloadTimesOf(database.postgres);
  const times = assetDownloadTimesOf(database.sqlite);
  return { record: times.record, flush: async () => times.flush() };
};
const bootstrapOn = (database: TestDatabase, dataDir: string, adminKey: string | undefined) =>
  database.kind === "sqlite"
    ? Promise.resolve(bootstrapAdminKey(database.sqlite, dataDir, adminKey, clock))
    : bootstrapPostgresAdminKey(database.postgres, dataDir, adminKey, clock);

describeOnBothDatabases("Asset retention rows, asset download times, admin key bootstrap", (database) => {
  let rows: AssetRetentionRows;
  let feedId: number;
  let other: number;
  const ids: Record<string, number> = {};
  beforeAll(async () => {
    rows = rowsOn(database());
    const { exec } = database();
    const feed = async (name: string) =>
      (
        (await exec(
          "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES (?, 'asset', ?, '{}', ?, ?) RETURNING id",
          [name, `k-${name}`, T0, T0],
        )) as [{ id: number }]
      )[0].id;
    feedId = await feed("assets");
    other = await feed("other");
    const file = async (feed: number, p: string, blob: string, size: number) =>
      (
        (await exec(
          `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, md5, sha1, sha512,
             created_at, modified_at) VALUES (?, ?, ?, '', 0, ?, ?, 'm', 's', 'x', ?, ?) RETURNING id`,
          [feed, p, p.toLowerCase(), sha(blob), size, T0, T0],
        )) as [{ id: number }]
      )[0].id;
    // path_key order (bytewise): 'B/x' < 'a' < 'b' by key 'a', 'b/x', 'b~'.
    ids.b = await file(feedId, "b~", "b", 2);
    ids.a = await file(feedId, "A", "a", 1);
    ids.bx = await file(feedId, "B/x", "c", 5_000_000_000);
    await exec(
      "INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, created_at, modified_at) VALUES (?, 'B', 'b', '', 1, ?, ?)",
      [feedId, T0, T0],
    );
    ids.o = await file(other, "o", "d", 3);
  });

  it("lists a directory's files in path_key order, never its folders", async () => {
    expect(await rows.candidates(feedId)).toEqual([
      { id: ids.a, path: "A", bytes: 1, modifiedAt: T0, lastDownloadedAt: undefined, sha256: sha("a") },
      { id: ids.bx, path: "B/x", bytes: 5_000_000_000, modifiedAt: T0, lastDownloadedAt: undefined, sha256: sha("c") },
      { id: ids.b, path: "b~", bytes: 2, modifiedAt: T0, lastDownloadedAt: undefined, sha256: sha("b") },
    ]);
    expect(await rows.candidates(999_999)).toEqual([]);
  });

  it("stamps downloads (at most once a minute per file, the latest kept), written when candidates are read", async () => {
    const times = timesOn(database());
    const at = (s: number) => new Date(Date.parse(T0) + s * 1000);
    times.record(feedId, "a", at(0));
    times.record(feedId, "a", at(30)); // within the minute: not stamped
    times.record(feedId, "b/x", at(10));
    times.record(feedId, "b", at(20)); // the folder: never stamped
    times.record(other, "o", at(5));
    times.record(feedId, "b/x", at(100));
    times.record(feedId, "gone", at(100));
    const candidates = await rows.candidates(feedId);
    expect(candidates.map((c) => [c.path, c.lastDownloadedAt])).toEqual([
      ["A", at(0).toISOString()],
      ["B/x", at(100).toISOString()],
      ["b~", undefined],
    ]);
    expect(await database().exec("SELECT last_downloaded_at AS at FROM asset_items WHERE id = ?", [ids.o])).toEqual([
      { at: at(5).toISOString() },
    ]);
    expect(await database().exec("SELECT last_downloaded_at AS at FROM asset_items WHERE is_folder = 1")).toEqual([
      { at: null },
    ]);
    await times.flush();
  });

  it("stamps quietly: no cache is told (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    postgresAssetDownloadTimesOf(db.postgres).record(feedId, "b~", new Date("2027-01-01T00:00:00.000Z"));
    await postgresAssetDownloadTimesOf(db.postgres).flush();
    expect(db.commits()).toBe(before);
    expect(await db.exec("SELECT last_downloaded_at AS at FROM asset_items WHERE id = ?", [ids.b])).toEqual([
      { at: "2027-01-01T00:00:00.000Z" },
    ]);
  });

  it("keeps a stamp whose directory another node is writing, and writes it once the directory is free (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const times = postgresAssetDownloadTimesOf(db.postgres);
    const writer = await db.postgres.pool.connect();
    try {
      await writer.query("BEGIN");
      await writer.query("SELECT 1 FROM feeds WHERE id = $1 FOR NO KEY UPDATE", [other]);
      times.record(other, "o", new Date("2027-02-01T00:00:00.000Z"));
      times.record(feedId, "a", new Date("2027-02-01T00:00:00.000Z"));
      await times.flush(); // does not wait for the writer
      const stamps = await db.exec(
        "SELECT id, last_downloaded_at AS at FROM asset_items WHERE id IN (?, ?) ORDER BY id",
        [ids.a, ids.o],
      );
      expect(stamps).toEqual([
        { id: ids.a, at: "2027-02-01T00:00:00.000Z" },
        { id: ids.o, at: expect.not.stringContaining("2027-02") },
      ]);
      await writer.query("COMMIT");
    } finally {
      writer.release();
    }
    await times.flush();
    expect(await db.exec("SELECT last_downloaded_at AS at FROM asset_items WHERE id = ?", [ids.o])).toEqual([
      { at: "2027-02-01T00:00:00.000Z" },
    ]);
  });

  it("generates an admin key at the first start only, and writes it to the data directory first", async () => {
    const db = database();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "wharf-bootstrap-"));
    try {
      const generated = await bootstrapOn(db, dataDir, undefined);
      expect(generated).toMatch(/.{20,}/);
      expect(fs.readFileSync(dataPaths(dataDir).adminApiKey, "utf8")).toBe(`${generated}\n`);
      expect(fs.statSync(dataPaths(dataDir).adminApiKey).mode & 0o777).toBe(0o600);
      expect(
        await db.exec("SELECT key_type, display_name, description, system_apis FROM api_keys WHERE key_hash = ?", [
          hashApiKey(generated as string),
        ]),
      ).toEqual([
        {
          key_type: "System",
          display_name: "Administrator (generated at first start)",
          description: "Full control, created at start-up",
          system_apis: '["full-control"]',
        },
      ]);
      expect(await bootstrapOn(db, dataDir, undefined)).toBeUndefined();
      expect(await db.exec("SELECT count(*) AS n FROM api_keys")).toEqual([{ n: 1 }]);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("ensures WHARF_ADMIN_API_KEY is a full-control System key, widening it when narrowed", async () => {
    const db = database();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "wharf-bootstrap-"));
    try {
      const select =
        "SELECT key_type, display_name, system_apis, package_permissions, feed_group, expires_at, user_id FROM api_keys WHERE key_hash = ?";
      expect(await bootstrapOn(db, dataDir, "the-admin-key")).toBeUndefined();
      const ensured = {
        key_type: "System",
        display_name: "Administrator (WHARF_ADMIN_API_KEY)",
        system_apis: '["full-control"]',
        package_permissions: null,
        feed_group: null,
        expires_at: null,
        user_id: null,
      };
      expect(await db.exec(select, [hashApiKey("the-admin-key")])).toEqual([ensured]);
      await db.exec(
        "UPDATE api_keys SET key_type = 'Feed', system_apis = NULL, package_permissions = '[\"view\"]', feed_group = 'g', expires_at = ?, display_name = 'Narrowed' WHERE key_hash = ?",
        [T0, hashApiKey("the-admin-key")],
      );
      expect(await bootstrapOn(db, dataDir, "the-admin-key")).toBeUndefined();
      expect(await db.exec(select, [hashApiKey("the-admin-key")])).toEqual([{ ...ensured, display_name: "Narrowed" }]);
      expect(fs.existsSync(dataPaths(dataDir).adminApiKey)).toBe(false);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("nodes starting at once: one generated key, one ensured key, no error (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    await db.exec("DELETE FROM api_keys");
    const dirs = [0, 1, 2].map(() => fs.mkdtempSync(path.join(os.tmpdir(), "wharf-bootstrap-")));
    const pools = dirs.map(() =>
      openPostgres(db.postgres.pool.options.connectionString as string, {
        applicationName: "wharf test, another node",
      }),
    );
    try {
      const nodes = pools.map((pool) => ({ pool, committed: () => undefined }));
      const generated = await Promise.all(
        nodes.map((node, i) => bootstrapPostgresAdminKey(node, dirs[i] as string, undefined, clock)),
      );
      expect(generated.filter((key) => key !== undefined)).toHaveLength(1);
      expect(await db.exec("SELECT count(*) AS n FROM api_keys")).toEqual([{ n: 1 }]);
      await Promise.all(nodes.map((node, i) => bootstrapPostgresAdminKey(node, dirs[i] as string, "shared", clock)));
      expect(await db.exec("SELECT count(*) AS n FROM api_keys WHERE key_hash = ?", [hashApiKey("shared")])).toEqual([
        { n: 1 },
      ]);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
