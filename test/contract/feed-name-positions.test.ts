import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createFeedRepository } from "../../src/areas/management/repository.js";
import { createPostgresFeedRepository } from "../../src/areas/management/repository-postgres.js";
import { MIGRATIONS_DIR, openDatabase } from "../../src/storage/database.js";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import { migratePostgres, POSTGRES_MIGRATIONS_DIR } from "../../src/storage/postgres/migrations.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * The migrations that give feed_names its position (migrations/0023, migrations/postgres/0006):
 * the names of a database made before them keep the order they were read back in until then,
 * SQLite's the order given (rowid order), PostgreSQL's name order, the primary name first.
 */

const NOW = "2026-11-29T10:00:00.000Z";
const temporary: string[] = [];

function temporaryDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wharf-feed-name-positions-"));
  temporary.push(dir);
  return dir;
}

/** A migrations directory of `from`'s files numbered below `version`. */
function migrationsBefore(from: string, version: number): string {
  const dir = temporaryDir();
  for (const name of fs.readdirSync(from).filter((f) => /^\d{4}-.+\.sql$/.test(f))) {
    if (Number.parseInt(name.slice(0, 4), 10) < version) fs.copyFileSync(path.join(from, name), path.join(dir, name));
  }
  return dir;
}

/**
 * Two feeds' names, as an older Wharf wrote them: "Main"'s in the order given, "Late"'s primary
 * row after its alternate names (the primary still comes first).
 */
const OLD_ROWS: [string, number, number, string][] = [
  ["main", 1, 1, "Main"],
  ["zeta", 1, 0, "zeta"],
  ["alpha", 1, 0, "alpha"],
  ["mid", 1, 0, "mid"],
  ["late-b", 2, 0, "late-b"],
  ["late-a", 2, 0, "late-a"],
  ["late", 2, 1, "Late"],
];
const FEEDS: [number, string][] = [
  [1, "Main"],
  [2, "Late"],
];
const INSERT_FEED = `INSERT INTO feeds (id, name, feed_type, storage_key, settings, created_at, modified_at)
  VALUES (?, ?, 'universal', ?, '{}', ?, ?)`;
const feedValues = ([id, name]: [number, string]) => [id, name, `store-${id}`, NOW, NOW];
const INSERT_NAME = "INSERT INTO feed_names (name_key, feed_id, is_primary, name) VALUES (?, ?, ?, ?)";
const dollars = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

afterAll(() => {
  for (const dir of temporary.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("feed_names.position on SQLite (migration 0023)", () => {
  it("numbers existing names in the order given, the primary first, and the feed reads them so", async () => {
    const file = path.join(temporaryDir(), "wharf.sqlite");
    const old = openDatabase(file, migrationsBefore(MIGRATIONS_DIR, 23));
    expect(old.pragma("user_version", { simple: true })).toBe(22);
    for (const feed of FEEDS) old.prepare(INSERT_FEED).run(...feedValues(feed));
    for (const row of OLD_ROWS) old.prepare(INSERT_NAME).run(...row);
    old.close();

    const db = openDatabase(file);
    try {
      expect(db.prepare("SELECT name_key, position FROM feed_names ORDER BY feed_id, position").all()).toEqual([
        { name_key: "main", position: 0 },
        { name_key: "zeta", position: 1 },
        { name_key: "alpha", position: 2 },
        { name_key: "mid", position: 3 },
        { name_key: "late", position: 0 },
        { name_key: "late-b", position: 1 },
        { name_key: "late-a", position: 2 },
      ]);
      const feeds = createFeedRepository(db);
      expect((await feeds.findByName("main"))?.alternateNames).toEqual(["zeta", "alpha", "mid"]);
      expect((await feeds.list()).map((feed) => feed.alternateNames)).toEqual([
        ["late-b", "late-a"],
        ["zeta", "alpha", "mid"],
      ]);
    } finally {
      db.close();
    }
  });
});

describe.skipIf(!postgresInstalled())("feed_names.position on PostgreSQL (migration 0006)", () => {
  it("numbers existing names in name order, the primary first, and the feed reads them so", async () => {
    const pool = openPostgres(await testPostgres().createDatabase(), { applicationName: "wharf test" });
    try {
      expect(await migratePostgres(pool, migrationsBefore(POSTGRES_MIGRATIONS_DIR, 6))).toEqual({ from: 0, to: 5 });
      for (const feed of FEEDS) await pool.query(dollars(INSERT_FEED), feedValues(feed));
      for (const row of OLD_ROWS) await pool.query(dollars(INSERT_NAME), row);
      expect(await migratePostgres(pool)).toEqual({ from: 5, to: expect.any(Number) as number });

      const positions = await pool.query("SELECT name_key, position FROM feed_names ORDER BY feed_id, position");
      expect(positions.rows).toEqual([
        { name_key: "main", position: 0 },
        { name_key: "alpha", position: 1 },
        { name_key: "mid", position: 2 },
        { name_key: "zeta", position: 3 },
        { name_key: "late", position: 0 },
        { name_key: "late-a", position: 1 },
        { name_key: "late-b", position: 2 },
      ]);
      const feeds = createPostgresFeedRepository({ pool, committed: () => undefined });
      expect((await feeds.findByName("main"))?.alternateNames).toEqual(["alpha", "mid", "zeta"]);
      expect((await feeds.list()).map((feed) => feed.alternateNames)).toEqual([
        ["late-a", "late-b"],
        ["alpha", "mid", "zeta"],
      ]);
    } finally {
      await pool.end();
    }
  });
});
