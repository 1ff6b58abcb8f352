import pg from "pg";
import { beforeAll, expect, it } from "vitest";
import type { AuditEntry, AuditRecord } from "../../../src/areas/audit/record.js";
import {
  type AuditRepository,
  type AuditRepositoryOptions,
  createAuditRepository,
} from "../../../src/areas/audit/repository.js";
import { createPostgresAuditRepository } from "../../../src/areas/audit/repository-postgres.js";
import { changeWatchOf } from "../../../src/storage/change-watch.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock, whileHeld } from "../../helpers/postgres-races.js";

const repositoryOn = (database: TestDatabase, options: AuditRepositoryOptions = {}): AuditRepository =>
  database.kind === "sqlite"
    ? createAuditRepository(database.sqlite, options)
    : createPostgresAuditRepository(database.postgres, options);

const entry = (at: string, fields: Partial<AuditEntry> = {}): AuditEntry => ({
  at,
  actor: { kind: "user", name: "ann" },
  address: "203.0.113.7",
  action: "PUT /upack/:feed/upload",
  object: "feed=main",
  status: 201,
  outcome: "success",
  requestId: `req-${at}`,
  ...fields,
});

const SMILE = "\u{1F600}";
/** Oldest first, as inserted (one batch). */
const FIRST: AuditEntry[] = [
  entry("2020-01-01T00:00:00.000Z"),
  entry("2020-02-01T00:00:00.000Z", {
    actor: { kind: "system-key", name: "CI" },
    action: "DELETE /api/management/feeds/delete/:name",
    object: "name=Main",
    status: 200,
  }),
  entry("2020-03-01T00:00:00.000Z", {
    actor: { kind: "anonymous", name: "" },
    action: "GET /api/audit",
    object: "",
    status: 401,
    outcome: "refused",
  }),
  entry("2020-04-01T00:00:00.000Z", {
    actor: { kind: "cli", name: "cli:root" },
    address: "local",
    action: "cli users add",
    object: "name=bob",
    status: 0,
  }),
  entry("2020-05-01T00:00:00.000Z", {
    actor: { kind: "user", name: "Ann" },
    action: `POST /api/x/${SMILE}`,
    object: "feed=main package=app",
    status: 500,
    outcome: "failed",
  }),
];

describeOnBothDatabases("Audit repository", (database) => {
  const otherNode = otherNodesForBlock(database);
  let audit: AuditRepository;
  /** FIRST as stored, newest first. */
  let stored: AuditRecord[];
  const cutoff = async () =>
    (await database().exec("SELECT prune_before FROM audit_retention WHERE id = 1"))[0]?.prune_before;
  const count = async () => Number((await database().exec("SELECT count(*) AS n FROM audit_records"))[0]?.n);

  beforeAll(() => {
    audit = repositoryOn(database(), { unsynced: true });
  });

  it("inserts a batch numbered in its order and pages it newest first, as recorded", async () => {
    await audit.insert([]);
    expect(await audit.page({}, 10)).toEqual([]);
    await audit.insert(FIRST);
    stored = await audit.page({}, 10);
    const first = stored.at(-1)?.id ?? 0;
    expect(stored).toEqual(FIRST.map((e, i) => ({ id: first + i, ...e })).reverse());
    expect(await audit.page({}, 2)).toEqual(stored.slice(0, 2));
    // A later batch numbers after it.
    await audit.insert([entry("2020-06-01T00:00:00.000Z", { requestId: "later" })]);
    const [later] = await audit.page({}, 1);
    expect(later).toEqual({ id: first + FIRST.length, ...entry("2020-06-01T00:00:00.000Z", { requestId: "later" }) });
  });

  it("filters by time, actor, action prefix, object and keyset, each as on SQLite", async () => {
    const [e5, e4, e3, e2, e1] = stored as [AuditRecord, AuditRecord, AuditRecord, AuditRecord, AuditRecord];
    const later = (await audit.page({}, 1))[0] as AuditRecord;
    const page = (filter: Parameters<AuditRepository["page"]>[0], limit = 10) => audit.page(filter, limit);
    // `from` inclusive, `to` exclusive.
    expect(await page({ from: "2020-02-01T00:00:00.000Z", to: "2020-04-01T00:00:00.000Z" })).toEqual([e3, e2]);
    expect(await page({ from: "2020-05-01T00:00:00.000Z" })).toEqual([later, e5]);
    // Actor: exact and case-sensitive; '' is Anonymous.
    expect(await page({ actor: "ann" })).toEqual([later, e1]);
    expect(await page({ actor: "Ann" })).toEqual([e5]);
    expect(await page({ actor: "" })).toEqual([e3]);
    expect(await page({ actor: "an" })).toEqual([]);
    // Action: a case-sensitive prefix, beyond the BMP too; '' keeps all.
    expect(await page({ action: "PUT" })).toEqual([later, e1]);
    expect(await page({ action: "put" })).toEqual([]);
    expect(await page({ action: "DELETE /api/management/feeds/delete/:name" })).toEqual([e2]);
    expect(await page({ action: "cli users" })).toEqual([e4]);
    expect(await page({ action: `POST /api/x/${SMILE}` })).toEqual([e5]);
    expect(await page({ action: `POST /api/x/${SMILE}!` })).toEqual([]);
    expect(await page({ action: "" }, 3)).toEqual([later, e5, e4]);
    // Object: contains, case-sensitive; '' keeps all.
    expect(await page({ object: "feed=main" })).toEqual([later, e5, e1]);
    expect(await page({ object: "Main" })).toEqual([e2]);
    expect(await page({ object: "package=app" })).toEqual([e5]);
    expect(await page({ object: "" }, 2)).toEqual([later, e5]);
    // Keyset paging: older than `after`.
    expect(await page({ after: e4.id })).toEqual([e3, e2, e1]);
    expect(await page({ after: e4.id }, 1)).toEqual([e3]);
    expect(await page({ after: e1.id })).toEqual([]);
    // All at once.
    expect(await page({ action: "PUT", object: "feed=main", after: e5.id, from: "2020-01-01T00:00:00.000Z" })).toEqual([
      e1,
    ]);
    expect(await page({ actor: "nobody" })).toEqual([]);
  });

  it("stores a NUL from a request (as U+FFFD on PostgreSQL) and goes on with the batch", async () => {
    const db = database();
    const nul = entry("2020-07-01T00:00:00.000Z", {
      actor: { kind: "anonymous", name: "a\u0000b" },
      object: "name=x\u0000y",
      requestId: "nul",
    });
    const after = entry("2020-07-02T00:00:00.000Z", { requestId: "after-nul" });
    await audit.insert([nul, after]);
    const kept = db.kind === "sqlite" ? "\u0000" : "\uFFFD";
    const [found] = await audit.page({ actor: "a\u0000b", object: "x\u0000y" }, 10);
    expect(found).toEqual({
      id: found?.id,
      ...nul,
      actor: { kind: "anonymous", name: `a${kept}b` },
      object: `name=x${kept}y`,
    });
    expect(await audit.page({ action: "PUT", from: "2020-07-02T00:00:00.000Z" }, 10)).toEqual([
      { id: (found?.id ?? 0) + 1, ...after },
    ]);
  });

  it("writes quietly when unsynced (the server's log), as any write otherwise (the CLI's record)", async () => {
    const db = database();
    let listener: pg.Client | undefined;
    const heard: string[] = [];
    if (db.kind === "postgres") {
      listener = new pg.Client({ connectionString: db.postgres.pool.options.connectionString as string });
      await listener.connect();
      listener.on("notification", (message) => heard.push(message.payload ?? ""));
      await listener.query("LISTEN wharf_changes");
    }
    try {
      const watch = db.kind === "sqlite" ? changeWatchOf(db.sqlite) : undefined;
      const version = watch?.version();
      const commits = db.kind === "postgres" ? db.commits() : 0;

      await audit.insert([entry("2020-08-01T00:00:00.000Z", { requestId: "quiet" })]);
      expect(await audit.prune("2019-01-01T00:00:00.000Z")).toBe(0);
      if (watch !== undefined) {
        watch.refresh();
        expect(watch.version()).toBe(version);
        // writeUnsynced's NORMAL lasted for its commit only.
        expect(db.kind === "sqlite" && db.sqlite.pragma("synchronous", { simple: true })).toBe(2);
      }
      if (db.kind === "postgres" && listener !== undefined) {
        expect(db.commits()).toBe(commits);
        // Notifications keep commit order: once our marker arrives, any audit write's has too.
        await db.exec("SELECT pg_notify('wharf_changes', 'marker')");
        while (!heard.includes("marker")) await new Promise((resolve) => setTimeout(resolve, 5));
        expect(heard).toEqual(["marker"]);
      }

      await repositoryOn(db).insert([entry("2020-08-02T00:00:00.000Z", { requestId: "loud" })]);
      if (watch !== undefined) {
        watch.refresh();
        expect(watch.version()).not.toBe(version);
      }
      if (db.kind === "postgres" && listener !== undefined) {
        expect(db.commits()).toBe(commits + 1);
        await db.exec("SELECT pg_notify('wharf_changes', 'marker 2')");
        while (!heard.includes("marker 2")) await new Promise((resolve) => setTimeout(resolve, 5));
        expect(heard).toEqual(["marker", "audit_records", "marker 2"]);
      }
      expect((await audit.page({ from: "2020-08-01T00:00:00.000Z" }, 10)).map((r) => r.requestId)).toEqual([
        "loud",
        "quiet",
      ]);
    } finally {
      await listener?.end();
    }
  });

  it("prunes what lies before the cutoff it moves forward; never moves it back nor past a day ago", async () => {
    const total = await count();
    // Moved by the quiet prune above.
    expect(await cutoff()).toBe("2019-01-01T00:00:00.000Z");
    expect(await audit.prune("2020-02-15T00:00:00.000Z")).toBe(2);
    expect(await cutoff()).toBe("2020-02-15T00:00:00.000Z");
    expect(await count()).toBe(total - 2);
    expect((await audit.page({ to: "2020-03-01T00:00:00.000Z" }, 10)).map((record) => record.at)).toEqual([]);
    // Again, and earlier: nothing more goes, the cutoff stays.
    expect(await audit.prune("2020-02-15T00:00:00.000Z")).toBe(0);
    expect(await audit.prune("2020-01-15T00:00:00.000Z")).toBe(0);
    expect(await cutoff()).toBe("2020-02-15T00:00:00.000Z");
    // `at` exactly at the cutoff stays (strictly before goes).
    expect(await audit.prune("2020-03-01T00:00:00.000Z")).toBe(0);
    expect(await audit.prune("2020-03-01T00:00:00.001Z")).toBe(1);
    // The database refuses a cutoff later than a day ago, and the transaction deletes nothing.
    const recent = new Date(Date.now() - 3_600_000).toISOString();
    await expect(audit.prune(recent)).rejects.toThrow(/only moves forward, and never past a day ago/);
    expect(await cutoff()).toBe("2020-03-01T00:00:00.001Z");
    expect(await count()).toBe(total - 3);
  });

  it("two nodes pruning at once delete each record once and leave the later cutoff (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const olderThan = async (at: string) =>
      Number((await db.exec("SELECT count(*) AS n FROM audit_records WHERE at < ?", [at]))[0]?.n);
    const holder = otherNode().pool;
    const nodeOne = createPostgresAuditRepository(otherNode(), { unsynced: true });
    const nodeTwo = createPostgresAuditRepository(otherNode(), { unsynced: true });
    const old = (year: number) =>
      Array.from({ length: 20 }, (_, i) =>
        entry(`${year}-01-${String(i + 1).padStart(2, "0")}T00:00:00.000Z`, { requestId: `old-${year}-${i}` }),
      );
    await nodeOne.insert(old(2021));
    await nodeTwo.insert(old(2022));
    // Same cutoff, both at once: what lies before it goes, once.
    const going = await olderThan("2022-01-01T00:00:00.000Z");
    expect(going).toBeGreaterThanOrEqual(20);
    const total = await count();
    const same = await Promise.all([
      nodeOne.prune("2022-01-01T00:00:00.000Z"),
      nodeTwo.prune("2022-01-01T00:00:00.000Z"),
    ]);
    expect(same[0] + same[1]).toBe(going);
    expect(await count()).toBe(total - going);

    // Both wait on the cutoff's row, then race: whichever goes first (early or late cutoff, on
    // either node), the later cutoff stays and what lies before it goes, once.
    for (const order of [0, 1]) {
      const year = 2023 + order;
      await nodeOne.insert(old(year));
      const early = `${year}-01-10T12:00:00.000Z`;
      const late = `${year + 1}-01-01T00:00:00.000Z`;
      const had = await count();
      const gone = await olderThan(late);
      const counts = await whileHeld(holder, {
        hold: (client) => client.query("SELECT * FROM audit_retention WHERE id = 1 FOR UPDATE"),
        race: () =>
          order === 0
            ? Promise.all([nodeOne.prune(early), nodeTwo.prune(late)])
            : Promise.all([nodeOne.prune(late), nodeTwo.prune(early)]),
        waiters: 2,
      });
      expect(counts[0] + counts[1]).toBe(gone);
      expect(await cutoff()).toBe(late);
      expect(await count()).toBe(had - gone);
      expect(await olderThan(late)).toBe(0);
    }
  });

  it("two nodes' batches at once are all stored, each numbered in its own order (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const nodes = [otherNode(), otherNode()].map((node) => createPostgresAuditRepository(node, { unsynced: true }));
    const batch = (node: number) =>
      Array.from({ length: 200 }, (_, i) =>
        entry(`2030-01-01T00:00:00.${String(i).padStart(3, "0")}Z`, { requestId: `node-${node}-${i}` }),
      );
    await Promise.all(nodes.map((node, i) => node.insert(batch(i))));
    const records = await audit.page({ from: "2030-01-01T00:00:00.000Z" }, 1000);
    expect(records).toHaveLength(400);
    for (const node of [0, 1]) {
      const mine = records.filter((record) => record.requestId.startsWith(`node-${node}-`)).reverse();
      expect(mine.map((record) => record.requestId)).toEqual(batch(node).map((e) => e.requestId));
    }
  });
});
