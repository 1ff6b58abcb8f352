import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { changeWatchOf, VersionedCache } from "../../src/storage/change-watch.js";
import { type Db, openDatabase } from "../../src/storage/database.js";

/** The change detection every in-process cache relies on (src/storage/change-watch.ts). */
describe("ChangeWatch", () => {
  let dir: string;
  let db: Db;
  const file = () => path.join(dir, "wharf.sqlite");
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-watch-"));
    db = openDatabase(file());
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT) STRICT");
  });
  afterEach(async () => {
    db.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it("is one watch per connection", () => {
    expect(changeWatchOf(db)).toBe(changeWatchOf(db));
  });

  it("moves with every write on the connection, at once, whatever code made it", () => {
    const watch = changeWatchOf(db);
    const before = watch.version();
    expect(watch.version()).toBe(before);
    db.prepare("INSERT INTO t (v) VALUES ('a')").run();
    const afterInsert = watch.version();
    expect(afterInsert).not.toBe(before);
    db.prepare("UPDATE t SET v = v").run(); // changes nothing visible, but is a write
    expect(watch.version()).not.toBe(afterInsert);
  });

  it("moves with another connection's commit once a new unit of work starts, or in the next turn", async () => {
    const watch = changeWatchOf(db);
    const outside = new Database(file());
    try {
      const before = watch.version();
      outside.prepare("INSERT INTO t (v) VALUES ('x')").run();
      watch.refresh(); // what app.ts does as each request starts
      const seen = watch.version();
      expect(seen).not.toBe(before);

      outside.prepare("DELETE FROM t").run();
      await nextTurn();
      expect(watch.version()).not.toBe(seen);
    } finally {
      outside.close();
    }
  });

  it("on the hot path, keeps another connection's answer for at most the given age, and sees its own writes at once", async () => {
    const watch = changeWatchOf(db);
    const outside = new Database(file());
    try {
      watch.refresh();
      const before = watch.version();
      outside.prepare("INSERT INTO t (v) VALUES ('x')").run();
      watch.refreshUnlessWithin(60_000); // asked just now: that answer stands
      expect(watch.version()).toBe(before);
      db.prepare("INSERT INTO t (v) VALUES ('own')").run();
      const own = watch.version();
      expect(own).not.toBe(before);
      await new Promise((resolve) => setTimeout(resolve, 5));
      watch.refreshUnlessWithin(1); // asked more than a millisecond ago: asked again
      expect(watch.version()).not.toBe(own);
    } finally {
      outside.close();
    }
  });

  it("does not move for quiet writes, and does for one that fails", () => {
    const watch = changeWatchOf(db);
    const before = watch.version();
    const changes = watch.quietly(() => db.prepare("INSERT INTO t (v) VALUES ('quiet')").run().changes);
    expect(changes).toBe(1);
    expect(watch.version()).toBe(before);
    expect(() =>
      watch.quietly(() =>
        db.transaction(() => {
          db.prepare("INSERT INTO t (v) VALUES ('rolled back')").run();
          throw new Error("boom");
        })(),
      ),
    ).toThrow("boom");
    expect(watch.version()).not.toBe(before);
  });
});

describe("VersionedCache", () => {
  it("answers under the version it was filled in, and forgets everything under another", () => {
    const cache = new VersionedCache<string, number>(10);
    expect(cache.get("a", "v1")).toBeUndefined();
    cache.set("a", "v1", 1);
    expect(cache.get("a", "v1")).toBe(1);
    expect(cache.get("a", "v2")).toBeUndefined();
    expect(cache.get("a", "v1")).toBeUndefined(); // emptied, not kept per version
  });

  it("drops a value stored under a version other than the one last asked with", () => {
    const cache = new VersionedCache<string, number>(10);
    cache.get("a", "v2");
    cache.set("a", "v1", 1); // read before v2 was seen: possibly older than what others saw
    expect(cache.get("a", "v2")).toBeUndefined();
  });

  it("keeps at most its bound, oldest out first", () => {
    const cache = new VersionedCache<number, number>(3);
    cache.get(0, "v");
    for (let i = 0; i < 5; i++) cache.set(i, "v", i);
    expect([0, 1, 2, 3, 4].map((i) => cache.get(i, "v"))).toEqual([undefined, undefined, 2, 3, 4]);
  });
});
