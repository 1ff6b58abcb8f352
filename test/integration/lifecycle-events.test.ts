import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createEventOutbox, packageEventWriter } from "../../src/lifecycle/events.js";
import { openDatabase } from "../../src/storage/database.js";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { createFeedKey, createSystemKey, execute, readAll } from "../helpers/fixtures.js";
import { filePart, formBody } from "../helpers/form-data.js";
import { releasesFixtures } from "../helpers/releases-fixtures.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

// The event outbox (issue 17 section 3; migrations/0017-lifecycle-events.sql): every change writes
// its event in its own transaction, and a refused change writes none.

let t: TestApp;
let admin: { "x-apikey": string };

interface EventRow {
  type: string;
  feed_name: string | null;
  package_group: string | null;
  package_name: string | null;
  package_version: string | null;
  actor: string;
  data: string;
}

const events = () =>
  readAll<EventRow>(
    t.database,
    `SELECT type, feed_name, package_group, package_name, package_version, actor, data
       FROM lifecycle_events ORDER BY id`,
  );
const forgetEvents = () => execute(t.database, "DELETE FROM lifecycle_events", []);

const upload = (feed: string, bytes: Buffer, key = admin) =>
  t.app.inject({
    method: "PUT",
    url: `/upack/${feed}/upload`,
    headers: { ...key, "content-type": "application/octet-stream" },
    payload: bytes,
  });

beforeAll(async () => {
  t = await buildTestApp();
  admin = { "x-apikey": t.adminKey };
  await createUpackFixtures(t).createFeed("main");
});
afterAll(async () => t?.close());
beforeEach(async () => forgetEvents());

describe("package events", () => {
  it("raises added, then overwritten, then deleted, naming the feed, the package and the actor", async () => {
    const named = { "x-apikey": await createSystemKey(t.database, ["full-control"], { displayName: "Build agent 7" }) };
    const bytes = await buildUpack({ group: "tools", name: "hammer", version: "1.0.0" });
    expect((await upload("main", bytes, named)).statusCode).toBe(201);
    expect((await upload("main", bytes, named)).statusCode).toBe(201);
    const deleted = await t.app.inject({
      method: "DELETE",
      url: "/upack/main/delete/tools/hammer/1.0.0",
      headers: admin,
    });
    expect(deleted.statusCode).toBe(200);

    const rows = await events();
    expect(rows.map((row) => row.type)).toEqual(["package.added", "package.overwritten", "package.deleted"]);
    expect(rows[0]).toMatchObject({
      feed_name: "main",
      package_group: "tools",
      package_name: "hammer",
      package_version: "1.0.0",
      actor: "Build agent 7",
    });
  });

  it("raises nothing for a refused upload, nor for any package of a form that is refused as a whole", async () => {
    const bytes = await buildUpack({ name: "kept", version: "1.0.0" });
    expect((await upload("main", bytes)).statusCode).toBe(201);
    await forgetEvents();
    // A feed key that may add but not overwrite: the same version again is a 409.
    const adder = { "x-apikey": await createFeedKey(t.database, "main", ["view", "add"]) };
    expect((await upload("main", bytes, adder)).statusCode).toBe(409);
    const body = formBody([
      filePart("fresh.upack", await buildUpack({ name: "fresh", version: "1.0.0" })),
      filePart("kept.upack", bytes),
    ]);
    const form = await t.app.inject({
      method: "POST",
      url: "/upack/main/upload",
      headers: { ...adder, "content-type": body.contentType },
      payload: body.payload,
    });
    expect(form.statusCode).toBe(409);
    expect(await events()).toEqual([]);
  });

  it("raises package.deployed with the record's application and target", async () => {
    expect((await upload("main", await buildUpack({ name: "shipped", version: "2.0.0" }))).statusCode).toBe(201);
    await forgetEvents();
    const res = await t.app.inject({
      method: "POST",
      url: "/api/package-deployment/",
      headers: { ...admin, "content-type": "application/json" },
      payload: {
        Application: "shop",
        Description: "release 7",
        Target: "prod-1",
        FeedName: "main",
        PackageName: "shipped",
        Version: "2.0.0",
      },
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
    const [row] = await events();
    expect(row).toMatchObject({ type: "package.deployed", package_name: "shipped", package_version: "2.0.0" });
    expect(JSON.parse(row?.data ?? "{}")).toMatchObject({ application: "shop", target: "prod-1" });
  });
});

describe("release, build and deployment events", () => {
  it("raises a status event when a release is created and when it is canceled", async () => {
    const f = releasesFixtures(t);
    const applicationId = await f.setup("Shop");
    await forgetEvents();
    await f.release(applicationId, "1.0", "Shop-pipeline");
    const canceled = await f.json("POST", "/api/releases/cancel", { applicationId, releaseNumber: "1.0" });
    expect(canceled.statusCode, canceled.body).toBe(200);
    const rows = (await events()).filter((row) => row.type === "release.status");
    expect(rows.map((row) => JSON.parse(row.data) as object)).toEqual([
      { application: "Shop", release: "1.0", status: "active", previousStatus: null },
      { application: "Shop", release: "1.0", status: "canceled", previousStatus: "active" },
    ]);
  });
});

describe("the outbox", () => {
  // On a database of its own: the app's webhook dispatcher takes t.db's events as they come.
  it("hands out pending events in order, forgets dispatched ones, and wakes a listener after a commit", async () => {
    const db = openDatabase(":memory:");
    try {
      db.prepare(
        `INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at)
         VALUES ('main', 'universal', 'k', '{}', '2026-01-01', '2026-01-01')`,
      ).run();
      const feedId = db.prepare("SELECT id FROM feeds").pluck().get() as number;
      const write = packageEventWriter(db);
      const outbox = createEventOutbox(db);
      let woken = 0;
      const stop = outbox.onAppended(() => (woken += 1));
      const append = (name: string) =>
        db.transaction(() =>
          write({
            type: "package.added",
            feedId,
            package: { group: "", name, version: "1.0.0" },
            actor: "alice",
            occurredAt: new Date("2026-01-01T00:00:00Z"),
          }),
        )();
      append("first");
      append("second");
      // A rolled-back change leaves no event.
      expect(() =>
        db.transaction(() => {
          append("never");
          throw new Error("rolled back");
        })(),
      ).toThrow("rolled back");
      await new Promise((resolve) => setImmediate(resolve));
      stop();
      expect(woken).toBeGreaterThanOrEqual(1);

      const pending = await outbox.pending(10);
      expect(pending.map((event) => event.package?.name)).toEqual(["first", "second"]);
      expect(pending[0]).toMatchObject({ type: "package.added", feedName: "main", actor: "alice" });
      const dispatchedAt = new Date("2026-01-01T00:00:00Z");
      db.transaction(() => outbox.markDispatched([pending[0]?.id ?? 0], dispatchedAt))();
      expect((await outbox.pending(10)).map((event) => event.package?.name)).toEqual(["second"]);
      expect(await outbox.pruneDispatched(new Date("2026-01-02T00:00:00Z"))).toBe(1);
    } finally {
      db.close();
    }
  });

  it("keeps the feed's name of the time when the feed is renamed before delivery", async () => {
    await createUpackFixtures(t).createFeed("old-name");
    expect((await upload("old-name", await buildUpack({ name: "moved", version: "1.0.0" }))).statusCode).toBe(201);
    await writeFromOutside(t, "UPDATE feeds SET name = 'new-name' WHERE name = 'old-name'");
    expect((await events()).at(-1)).toMatchObject({ feed_name: "old-name", package_name: "moved" });
  });
});
