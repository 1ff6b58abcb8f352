import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isConstraintViolation, isForeignKeyViolation, isUniqueViolation } from "../../src/storage/sqlite-errors.js";

/** storage/sqlite-errors.ts: the driver's real errors, raised by a real (in-memory) SQLite. */

let db: Database.Database;

beforeEach(() => {
  db = new Database(":memory:");
  db.pragma("foreign_keys = ON");
  db.exec(`
    CREATE TABLE parent (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE) STRICT;
    CREATE TABLE named (name TEXT PRIMARY KEY) STRICT, WITHOUT ROWID;
    CREATE TABLE child (parent_id INTEGER NOT NULL REFERENCES parent(id), n INTEGER CHECK (n > 0)) STRICT;
    INSERT INTO parent (id, key) VALUES (1, 'a');
    INSERT INTO named (name) VALUES ('a');
  `);
});
afterEach(() => db.close());

/** The error a statement throws; fails the test when it throws none. */
function errorOf(sql: string): unknown {
  try {
    db.exec(sql);
  } catch (error) {
    return error;
  }
  throw new Error(`no error from ${sql}`);
}

describe("SQLite constraint errors", () => {
  it("a UNIQUE column and a PRIMARY KEY taken are unique violations, and nothing else", () => {
    for (const error of [
      errorOf("INSERT INTO parent (id, key) VALUES (2, 'a')"),
      errorOf("INSERT INTO named (name) VALUES ('a')"),
    ]) {
      expect(isUniqueViolation(error)).toBe(true);
      expect(isForeignKeyViolation(error)).toBe(false);
      expect(isConstraintViolation(error)).toBe(true);
    }
  });

  it("a missing referenced row is a foreign-key violation, and not a unique one", () => {
    const error = errorOf("INSERT INTO child (parent_id, n) VALUES (9, 1)");
    expect(isForeignKeyViolation(error)).toBe(true);
    expect(isUniqueViolation(error)).toBe(false);
    expect(isConstraintViolation(error)).toBe(true);
  });

  it("a CHECK or NOT NULL failure is a constraint violation of neither kind", () => {
    for (const error of [
      errorOf("INSERT INTO child (parent_id, n) VALUES (1, 0)"),
      errorOf("INSERT INTO parent (id, key) VALUES (3, NULL)"),
    ]) {
      expect(isConstraintViolation(error)).toBe(true);
      expect(isUniqueViolation(error)).toBe(false);
      expect(isForeignKeyViolation(error)).toBe(false);
    }
  });

  it("other errors, and look-alikes that are not the driver's, are no constraint violations", () => {
    const syntax = errorOf("INSERT INTO nowhere VALUES (1)");
    const lookAlike = Object.assign(new Error("fake"), { code: "SQLITE_CONSTRAINT_UNIQUE" });
    for (const error of [syntax, lookAlike, undefined, null, "SQLITE_CONSTRAINT_UNIQUE"]) {
      expect(isConstraintViolation(error)).toBe(false);
      expect(isUniqueViolation(error)).toBe(false);
      expect(isForeignKeyViolation(error)).toBe(false);
    }
  });
});
