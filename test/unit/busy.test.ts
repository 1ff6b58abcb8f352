import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database, { SqliteError } from "better-sqlite3";
import Fastify from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { registerErrorHandling } from "../../src/http/errors.js";
import { isBusy, neverBlockOnLocks, retryWhileBusy, unlessBusy, withBusyRetries } from "../../src/storage/busy.js";
import { type Db, openDatabase } from "../../src/storage/database.js";

/** storage/busy.ts: writes wait for another connection's lock asynchronously, then give up with 503. */

let dir: string;
let db: Db;
/** The other connection (another process, for the server's connection), holding the write lock when asked. */
let other: Db;

const lock = () => other.exec("BEGIN IMMEDIATE");
const unlock = () => other.exec("COMMIT");
const insert = () => db.prepare("INSERT INTO t (v) VALUES (1)").run().changes;
const rows = () => (db.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "wharf-busy-"));
  const file = path.join(dir, "wharf.sqlite");
  db = openDatabase(file);
  db.exec("CREATE TABLE t (v INTEGER)");
  neverBlockOnLocks(db, 10_000);
  other = new Database(file);
});
afterEach(() => {
  if (other.inTransaction) other.exec("ROLLBACK");
  other.close();
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("neverBlockOnLocks", () => {
  it("makes a statement that needs a held lock fail at once with SQLITE_BUSY instead of waiting in SQLite", () => {
    expect(db.pragma("busy_timeout", { simple: true })).toBe(0);
    lock();
    let error: unknown;
    try {
      insert();
    } catch (caught) {
      error = caught;
    }
    expect(isBusy(error)).toBe(true);
    // Reads go on (WAL): a writer never blocks them.
    expect(rows()).toBe(0);
  });
});

describe("retryWhileBusy", () => {
  it("tries again until the other connection lets go, and returns what the write returned", async () => {
    lock();
    let attempts = 0;
    setTimeout(unlock, 50);
    const changes = await retryWhileBusy(db, () => {
      attempts++;
      return insert();
    });
    expect(changes).toBe(1);
    expect(attempts).toBeGreaterThan(1);
    expect(rows()).toBe(1);
  });

  it("gives up after the wait with DATABASE_BUSY, an `unavailable` error with Retry-After", async () => {
    lock();
    let attempts = 0;
    const failure = await retryWhileBusy(
      db,
      () => {
        attempts++;
        return insert();
      },
      60,
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DomainError);
    expect(failure).toMatchObject({ kind: "unavailable", code: "DATABASE_BUSY", retryAfterSeconds: 1 });
    expect(attempts).toBeGreaterThan(1);
    unlock();
    expect(rows()).toBe(0);
  });

  it("passes any other error through at once", async () => {
    let attempts = 0;
    const failure = await retryWhileBusy(db, () => {
      attempts++;
      return db.prepare("INSERT INTO missing VALUES (1)").run();
    }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SqliteError);
    expect(attempts).toBe(1);
  });

  it("waits only as long as the connection says; a connection never switched tries once", async () => {
    const plain = new Database(path.join(dir, "wharf.sqlite"), { timeout: 0 });
    try {
      lock();
      const failure = await retryWhileBusy(plain, () => plain.prepare("INSERT INTO t (v) VALUES (2)").run()).catch(
        (error: unknown) => error,
      );
      expect(failure).toMatchObject({ code: "DATABASE_BUSY" });
    } finally {
      plain.close();
    }
  });
});

describe("withBusyRetries", () => {
  it("retries a repository's async methods and leaves everything else as it is", async () => {
    let calls = 0;
    const repository = withBusyRetries(db, {
      limit: 3,
      generation: () => "g1",
      async add() {
        calls++;
        return insert();
      },
      async broken(): Promise<never> {
        throw new Error("not a lock");
      },
    });
    expect(repository.limit).toBe(3);
    expect(repository.generation()).toBe("g1");
    lock();
    setTimeout(unlock, 50);
    expect(await repository.add()).toBe(1);
    expect(calls).toBeGreaterThan(1);
    await expect(repository.broken()).rejects.toThrow("not a lock");
  });
});

describe("unlessBusy", () => {
  it("skips a write that finds the lock taken, at once, and runs it otherwise", () => {
    lock();
    expect(unlessBusy(insert)).toBeUndefined();
    unlock();
    expect(unlessBusy(insert)).toBe(1);
    expect(() => unlessBusy(() => db.prepare("INSERT INTO missing VALUES (1)").run())).toThrow(SqliteError);
  });
});

describe("the error handler", () => {
  it("answers a SQLITE_BUSY that escaped every retry with 503 DATABASE_BUSY and Retry-After, not a 500", async () => {
    const app = Fastify({ logger: false });
    registerErrorHandling(app);
    app.get("/write", async () => {
      throw new SqliteError("database is locked", "SQLITE_BUSY");
    });
    const res = await app.inject({ url: "/write" });
    expect(res.statusCode).toBe(503);
    expect(res.headers["retry-after"]).toBe("1");
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.headers["x-wharf-error"]).toBe("DATABASE_BUSY");
    expect(res.body).toBe("The database is busy (another process holds its write lock); try again shortly.");
    await app.close();
  });
});
