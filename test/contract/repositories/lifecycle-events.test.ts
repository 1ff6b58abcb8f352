import { beforeAll, expect, it } from "vitest";
import { bodyOf } from "../../../src/areas/webhooks/dispatcher.js";
import { createWebhookRepository, type WebhookRepository } from "../../../src/areas/webhooks/repository.js";
import { createPostgresWebhookRepository } from "../../../src/areas/webhooks/repository-postgres.js";
import {
  createEventOutbox,
  type EventOutbox,
  type PackageEvent,
  packageEventWriter,
  type StoredEvent,
} from "../../../src/lifecycle/events.js";
import { appendPackageEvent, createPostgresEventOutbox } from "../../../src/lifecycle/events-postgres.js";
import { inTransaction } from "../../../src/storage/postgres/database.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { onOtherNode, whileHeld } from "../../helpers/postgres-races.js";
import { insertApplication, insertFeed, insertRelease } from "../../helpers/seed-rows.js";

const T0 = new Date("2026-11-29T10:00:00.000Z");
const at = (hours: number) => new Date(T0.getTime() + hours * 3_600_000);
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The database's outbox, as createEventOutbox picks it (events-postgres.ts on PostgreSQL). */
const outboxOn = (database: TestDatabase): EventOutbox =>
  createEventOutbox(database.kind === "sqlite" ? database.sqlite : database.postgres);

/**
 * Runs `change` and appends `event` in one transaction of the database's, as a repository does
 * (packageEventWriter on SQLite, appendPackageEvent on PostgreSQL); `change` may throw to roll back.
 */
async function inChangeTransaction(database: TestDatabase, event: PackageEvent, change: () => void): Promise<void> {
  if (database.kind === "sqlite") {
    const write = packageEventWriter(database.sqlite);
    database.sqlite.transaction(() => {
      write(event);
      change();
    })();
  } else {
    await inTransaction(database.postgres, async (client) => {
      await appendPackageEvent(client, event);
      change();
    });
  }
}

/** The fan-out the dispatcher runs the outbox's markDispatched in (areas/webhooks/dispatcher.ts). */
const webhooksOn = (database: TestDatabase): WebhookRepository =>
  database.kind === "sqlite"
    ? createWebhookRepository(database.sqlite)
    : createPostgresWebhookRepository(database.postgres);

interface EventFields {
  readonly type?: string;
  readonly feedId?: number | null;
  readonly feedName?: string | null;
  readonly group?: string | null;
  readonly name?: string | null;
  readonly version?: string | null;
  readonly actor?: string;
  readonly data?: string;
  readonly occurredAt?: string;
  readonly dispatchedAt?: string | null;
}

describeOnBothDatabases("lifecycle event outbox", (database) => {
  let outbox: EventOutbox;
  let feedId: number;

  /** An outbox row as the writers leave it; its id. */
  const append = async (fields: EventFields = {}): Promise<number> => {
    const [{ id }] = (await database().exec(
      `INSERT INTO lifecycle_events (occurred_at, type, feed_id, feed_name, package_group, package_name,
         package_version, actor, data, dispatched_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
      [
        fields.occurredAt ?? T0.toISOString(),
        fields.type ?? "package.added",
        fields.feedId === undefined ? feedId : fields.feedId,
        fields.feedName === undefined ? "main" : fields.feedName,
        fields.group === undefined ? "" : fields.group,
        fields.name === undefined ? "app" : fields.name,
        fields.version === undefined ? "1.0.0" : fields.version,
        fields.actor ?? "Ann",
        fields.data ?? "{}",
        fields.dispatchedAt ?? null,
      ],
    )) as [{ id: number }];
    return id;
  };
  const dispatchedAt = async (id: number) =>
    (await database().exec("SELECT dispatched_at FROM lifecycle_events WHERE id = ?", [id]))[0]?.dispatched_at;
  const clear = () => database().exec("DELETE FROM lifecycle_events");
  const commits = () => {
    const db = database();
    return db.kind === "postgres" ? db.commits() : 0;
  };

  beforeAll(async () => {
    outbox = outboxOn(database());
    feedId = await insertFeed(database().exec, "main", T0.toISOString());
  });

  it("hands out nothing from an empty outbox", async () => {
    expect(await outbox.pending(10)).toEqual([]);
  });

  it("hands out pending events whole, oldest first, up to the limit, and never a dispatched one", async () => {
    await clear();
    const added = await append({
      group: "tools",
      name: "app",
      version: "1.2.0",
      data: '{"repackagedFrom":{"version":"1.2.0-rc1"},"tags":["a","b"],"n":1.5,"none":null}',
    });
    await append({ name: "gone", dispatchedAt: at(-1).toISOString() });
    const ungrouped = await append({ type: "package.deleted", group: null, name: "lib", version: null });
    const fromAnotherFeed = await append({
      type: "package.promoted",
      feedId: 999,
      feedName: "old name",
      actor: "Wharf",
      data: '{"fromFeed":"main"}',
    });
    // A delivery event made by the database's own trigger: no feed, no package, the database's clock.
    const applicationId = await insertApplication(database().exec, "Shop", T0.toISOString());
    await insertRelease(database().exec, {
      applicationId,
      number: "1.0",
      sequence: 1,
      createdBy: "Bob",
      createdOn: T0.toISOString(),
    });

    const before = commits();
    const events = await outbox.pending(10);
    expect(events).toEqual([
      {
        id: added,
        occurredAt: T0.toISOString(),
        type: "package.added",
        feedId,
        feedName: "main",
        package: { group: "tools", name: "app", version: "1.2.0" },
        actor: "Ann",
        data: { repackagedFrom: { version: "1.2.0-rc1" }, tags: ["a", "b"], n: 1.5, none: null },
      },
      {
        id: ungrouped,
        occurredAt: T0.toISOString(),
        type: "package.deleted",
        feedId,
        feedName: "main",
        package: { group: "", name: "lib", version: "" },
        actor: "Ann",
        data: {},
      },
      {
        id: fromAnotherFeed,
        occurredAt: T0.toISOString(),
        type: "package.promoted",
        feedId: 999,
        feedName: "old name",
        package: { group: "", name: "app", version: "1.0.0" },
        actor: "Wharf",
        data: { fromFeed: "main" },
      },
      {
        id: expect.any(Number),
        occurredAt: expect.stringMatching(ISO_TIME),
        type: "release.status",
        feedId: undefined,
        feedName: undefined,
        package: undefined,
        actor: "Bob",
        data: { application: "Shop", release: "1.0", status: "active", previousStatus: null },
      },
    ] satisfies StoredEvent[]);
    expect(events[3]?.id).toBeGreaterThan(fromAnotherFeed);
    expect(await outbox.pending(2)).toEqual(events.slice(0, 2));
    expect(await outbox.pending(0)).toEqual([]);
    // A negative limit is none, as SQLite's LIMIT -1.
    expect(await outbox.pending(-1)).toEqual(events);
    expect(commits()).toBe(before);
  });

  it("appends a package event in the change's own transaction: committed with it, rolled back with it", async () => {
    await clear();
    const event: PackageEvent = {
      type: "package.deployed",
      feedId,
      package: { group: "", name: "app", version: "2.0.0" },
      actor: "Ann",
      data: { application: "shop", target: null },
      occurredAt: at(3),
    };
    await expect(
      inChangeTransaction(database(), { ...event, actor: "rolled back" }, () => {
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    await inChangeTransaction(database(), event, () => undefined);
    expect(await outbox.pending(10)).toEqual([
      {
        id: expect.any(Number),
        occurredAt: at(3).toISOString(),
        type: "package.deployed",
        feedId,
        feedName: "main",
        package: { group: "", name: "app", version: "2.0.0" },
        actor: "Ann",
        data: { application: "shop", target: null },
      },
    ] satisfies StoredEvent[]);
  });

  it("marks what the fan-out took, in the fan-out's transaction: those events are no longer handed out", async () => {
    await clear();
    const ids = [await append({ name: "one" }), await append({ name: "two" }), await append({ name: "three" })];
    const [first, second] = await outbox.pending(2);
    const told: number[][] = [];
    const made = await webhooksOn(database()).fanOut(
      [first, second] as StoredEvent[],
      bodyOf,
      (marked) => {
        told.push([...marked]);
        outbox.markDispatched(marked, at(1));
      },
      at(1),
    );
    expect(made).toBe(0);
    expect(told).toEqual([[ids[0], ids[1]]]);
    expect((await outbox.pending(10)).map((event) => event.id)).toEqual([ids[2]]);
    expect(await dispatchedAt(ids[0] as number)).toBe(at(1).toISOString());
    expect(await dispatchedAt(ids[1] as number)).toBe(at(1).toISOString());
    expect(await dispatchedAt(ids[2] as number)).toBeNull();
  });

  it("markDispatched on its own: SQLite marks in the caller's transaction, PostgreSQL leaves it to the fan-out", async () => {
    await clear();
    const id = await append();
    const db = database();
    const before = commits();
    if (db.kind === "sqlite") db.sqlite.transaction(() => outbox.markDispatched([id, 999_999], at(2)))();
    else outbox.markDispatched([id, 999_999], at(2));
    expect(await dispatchedAt(id)).toBe(db.kind === "sqlite" ? at(2).toISOString() : null);
    expect(commits()).toBe(before);
  });

  it("prunes events dispatched before the cut-off, and only those, once", async () => {
    await clear();
    const cutOff = at(0);
    const old = [
      await append({ dispatchedAt: at(-48).toISOString() }),
      await append({ dispatchedAt: at(-1).toISOString() }),
    ];
    const kept = [
      await append({ dispatchedAt: cutOff.toISOString() }),
      await append({ dispatchedAt: at(1).toISOString() }),
      await append({ occurredAt: at(-72).toISOString() }),
    ];
    const before = commits();
    expect(await outbox.pruneDispatched(cutOff)).toBe(2);
    expect(await outbox.pruneDispatched(cutOff)).toBe(0);
    const left = (await database().exec("SELECT id FROM lifecycle_events ORDER BY id")).map((row) => row.id);
    expect(left).toEqual(kept);
    expect(left).not.toContain(old[0]);
    expect((await outbox.pending(10)).map((event) => event.id)).toEqual([kept[2]]);
    // PostgreSQL: an ordinary write, as SQLite's (not quiet): the node is told each time.
    if (database().kind === "postgres") expect(commits()).toBe(before + 2);
  });

  it("announces this process's package events to a listener until it stops listening (SQLite's writer only)", async () => {
    await clear();
    const db = database();
    let woken = 0;
    const stop = outbox.onAppended(() => (woken += 1));
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    const event = {
      type: "package.added",
      feedId,
      package: { group: "", name: "app", version: "1.0.0" },
      actor: "Ann",
      occurredAt: T0,
    } as const;
    if (db.kind === "sqlite") {
      const write = packageEventWriter(db.sqlite);
      db.sqlite.transaction(() => write(event))();
      await tick();
      expect(woken).toBe(1);
      stop();
      db.sqlite.transaction(() => write(event))();
    } else {
      // No writer announces on PostgreSQL: the dispatcher polls (or wakes on the change feed).
      await append();
      await tick();
      expect(woken).toBe(0);
      stop();
    }
    await tick();
    expect(woken).toBe(db.kind === "sqlite" ? 1 : 0);
    expect(await outbox.pending(10)).toHaveLength(db.kind === "sqlite" ? 2 : 1);
  });

  it("hands out an event whose transaction commits after a later one's was handed out (PostgreSQL)", async (context) => {
    const db = database();
    if (db.kind !== "postgres") return context.skip();
    await clear();
    const slow = await db.postgres.pool.connect();
    try {
      await slow.query("BEGIN");
      const earlier = (
        await slow.query<{ id: number }>(
          `INSERT INTO lifecycle_events (occurred_at, type, actor, data) VALUES ($1, 'build.status', 'Ann', '{}') RETURNING id`,
          [T0.toISOString()],
        )
      ).rows[0]?.id as number;
      const later = await append();
      expect(later).toBeGreaterThan(earlier);
      expect((await outbox.pending(10)).map((event) => event.id)).toEqual([later]);
      await db.exec("UPDATE lifecycle_events SET dispatched_at = ? WHERE id = ?", [at(1).toISOString(), later]);
      await slow.query("COMMIT");
      expect((await outbox.pending(10)).map((event) => event.id)).toEqual([earlier]);
    } finally {
      slow.release();
    }
  });

  it("two nodes pruning at once delete each event once, without an error (PostgreSQL)", async (context) => {
    const db = database();
    if (db.kind !== "postgres") return context.skip();
    await clear();
    const ids: number[] = [];
    for (let n = 0; n < 20; n++) ids.push(await append({ dispatchedAt: at(-1).toISOString() }));
    const pending = await append();
    await onOtherNode(db, createPostgresEventOutbox, async (otherOutbox) => {
      // A third session holds the first row, so that both deletes have started before either can finish.
      const counts = await whileHeld(db.postgres.pool, {
        hold: (holder) => holder.query("SELECT id FROM lifecycle_events WHERE id = $1 FOR UPDATE", [ids[0]]),
        race: () => Promise.all([outbox.pruneDispatched(at(0)), otherOutbox.pruneDispatched(at(0))]),
        waiters: 2,
      });
      expect(counts[0] + counts[1]).toBe(20);
      expect((await db.exec("SELECT id FROM lifecycle_events")).map((row) => row.id)).toEqual([pending]);
    });
  });
});
