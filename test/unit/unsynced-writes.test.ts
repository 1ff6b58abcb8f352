import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { changeWatchOf } from "../../src/storage/change-watch.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { writeUnsynced } from "../../src/storage/unsynced-writes.js";

let dir: string;
let db: Db;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "wharf-unsynced-"));
  db = openDatabase(path.join(dir, "wharf.sqlite"));
  db.exec("CREATE TABLE notes (text TEXT)");
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const level = () => db.pragma("synchronous", { simple: true });

describe("writeUnsynced", () => {
  it("commits with synchronous NORMAL, then FULL again, and moves no ChangeWatch version", () => {
    const watch = changeWatchOf(db);
    const before = watch.version();
    expect(level()).toBe(2);
    const seen = writeUnsynced(db, () => {
      db.prepare("INSERT INTO notes VALUES ('kept')").run();
      return level();
    });
    expect(seen).toBe(1);
    expect(level()).toBe(2);
    expect(db.prepare("SELECT text FROM notes").pluck().all()).toEqual(["kept"]);
    watch.refresh();
    expect(watch.version()).toBe(before);
    // An ordinary write still moves it.
    db.prepare("INSERT INTO notes VALUES ('seen')").run();
    expect(watch.version()).not.toBe(before);
  });

  it("restores FULL when the write throws", () => {
    expect(() =>
      writeUnsynced(db, () => {
        throw new Error("refused");
      }),
    ).toThrow("refused");
    expect(level()).toBe(2);
  });
});
