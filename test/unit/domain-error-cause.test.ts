import net from "node:net";
import { SqliteError } from "better-sqlite3";
import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import type { Connector } from "../../src/areas/connectors/model.js";
import { connectorError } from "../../src/areas/connectors/upstream-errors.js";
import { withField } from "../../src/areas/management/feed-validation.js";
import { parseSteps } from "../../src/areas/releases/plan-steps.js";
import { describeFailure } from "../../src/areas/upack/virtual/errors.js";
import { conflict, DomainError, invalid, notFound } from "../../src/domain/errors.js";
import { createGuardedFetch } from "../../src/net/fetch-guard.js";
import { createUserRepository } from "../../src/areas/security/user-repository.js";
import { retryWhileBusy } from "../../src/storage/busy.js";
import { openDatabase } from "../../src/storage/database.js";
import type { Db } from "../../src/storage/database.js";
import { diskFull } from "../../src/storage/disk-full.js";

/**
 * A DomainError made from another error keeps it as the standard ES2022 `cause` (docs/STYLE.md
 * "Errors": `DomainError(kind, code, message, { cause })`), so that the log shows the driver's,
 * the network's or the inner domain error behind a 503, 502 or 400; the client still sees only
 * the message (http/errors.ts).
 */
describe("DomainError's cause", () => {
  it("is the error given, and absent when none is", () => {
    const original = new Error("EIO: i/o error");
    const error = new DomainError("unavailable", "SOMETHING", "It failed.", { cause: original });
    expect(error.cause).toBe(original);
    expect(error.message).toBe("It failed.");
    expect("cause" in new DomainError("invalid", "SOMETHING", "It failed.")).toBe(false);
  });

  it("sits beside Retry-After, which the older number shorthand still sets", () => {
    const original = new Error("busy");
    const error = new DomainError("unavailable", "X", "m", { cause: original, retryAfterSeconds: 3 });
    expect(error.retryAfterSeconds).toBe(3);
    expect(error.cause).toBe(original);
    expect(new DomainError("unavailable", "X", "m", 7).retryAfterSeconds).toBe(7);
    expect(new DomainError("unavailable", "X", "m").retryAfterSeconds).toBeUndefined();
  });

  it("is kept by invalid, notFound and conflict", () => {
    const original = new Error("inner");
    for (const make of [invalid, notFound, conflict]) expect(make("C", "m", { cause: original }).cause).toBe(original);
  });

  it("is kept where a domain error is re-made with context (feed fields, plan steps, virtual sources)", () => {
    const inner = invalid("INVALID_PATTERN", "patterns must be strings");
    const withName = withField("packageFilters", inner) as DomainError;
    expect(withName.message).toBe("packageFilters: patterns must be strings");
    expect(withName.cause).toBe(inner);

    let planError: unknown;
    try {
      parseSteps([{ type: "no-such-step" }], "stages[0].plan");
    } catch (error) {
      planError = error;
    }
    expect(planError).toBeInstanceOf(DomainError);
    expect((planError as DomainError).message).toMatch(/^stages\[0\]\.plan: /);
    expect((planError as DomainError).cause).toBeInstanceOf(DomainError);
    expect(((planError as DomainError).cause as DomainError).code).toBe((planError as DomainError).code);

    const upstream = new DomainError("gateway_timeout", "FETCH_TIMEOUT", "timed out");
    const virtual = describeFailure(upstream, "contents[0]", { kind: "url", url: "https://example.org/a.zip" });
    expect((virtual as DomainError).cause).toBe(upstream);
  });

  it("is the upstream's failure behind a connector's 502", () => {
    const connector = { name: "upstream" } as Connector;
    const socket = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    const failed = connectorError(connector, socket);
    expect(failed.code).toBe("CONNECTOR_FAILED");
    expect(failed.cause).toBe(socket);
    const guard = new DomainError("bad_gateway", "FETCH_FAILED", "Fetching from x failed.");
    expect(connectorError(connector, guard).cause).toBe(guard);
  });

  it("is SQLite's SQLITE_BUSY behind DATABASE_BUSY and the disk's ENOSPC behind DISK_FULL", async () => {
    const busy = new SqliteError("database is locked", "SQLITE_BUSY");
    const refused = await retryWhileBusy(
      {} as Db,
      () => {
        throw busy;
      },
      0,
    ).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "DATABASE_BUSY", retryAfterSeconds: expect.any(Number) });
    expect((refused as DomainError).cause).toBe(busy);

    const enospc = Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
    expect(diskFull("the upload was not stored", enospc).cause).toBe(enospc);
  });

  it("is SQLite's constraint error behind a conflict a repository works out from it (USER_EXISTS)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wharf-cause-"));
    const db = openDatabase(path.join(dir, "wharf.sqlite"));
    try {
      const users = createUserRepository(db);
      const none = { displayName: undefined, email: undefined, passwordHash: undefined };
      const user = { name: "ann", ...none, groupIds: [], createdAt: new Date(0).toISOString() };
      await users.insertUser(user);
      const error = await users.insertUser({ ...user, name: "ANN" }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(DomainError);
      expect(error).toMatchObject({ code: "USER_EXISTS" });
      expect((error as DomainError).cause).toBeInstanceOf(SqliteError);
      expect((error as DomainError).cause).toMatchObject({
        code: expect.stringMatching(/^SQLITE_CONSTRAINT/) as unknown,
      });
    } finally {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is the socket error behind a fetch's FETCH_FAILED (a real refused connection on loopback)", async () => {
    // A port that was free a moment ago: nothing listens there, so the connection is refused.
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));

    const fetch = createGuardedFetch({ allowPrivate: true, timeoutMs: 5_000, maxBytes: 1024, maxRedirects: 0 });
    const failed = await fetch(`http://127.0.0.1:${port}/`).catch((error: unknown) => error);
    expect(failed).toMatchObject({ code: "FETCH_FAILED", kind: "bad_gateway" });
    expect((failed as DomainError).cause).toMatchObject({ code: "ECONNREFUSED" });
  });

  it("is found by a fetch's DNS failure (FETCH_HOST_NOT_FOUND)", async () => {
    const missing = Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.invalid"), { code: "ENOTFOUND" });
    const fetch = createGuardedFetch({
      allowPrivate: false,
      timeoutMs: 5_000,
      maxBytes: 1024,
      maxRedirects: 0,
      resolve: async () => {
        throw missing;
      },
    });
    const failed = await fetch("http://nowhere.invalid/").catch((error: unknown) => error);
    expect(failed).toMatchObject({ code: "FETCH_HOST_NOT_FOUND" });
    expect((failed as DomainError).cause).toBe(missing);
  });
});
