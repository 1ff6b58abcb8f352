import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AuditLog, createAuditLog } from "../../src/areas/audit/index.js";
import type { AuditEntry } from "../../src/areas/audit/record.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * The audit log wired on PostgreSQL (cluster mode), as app.ts builds it: appends batched into
 * quiet transactions, pages and exports that read their own writes, records of every node in one
 * log, and pruning (its daily schedule too) that two nodes may run at once.
 */

const entry = (at: string, overrides: Partial<AuditEntry> = {}): AuditEntry => ({
  at,
  actor: { kind: "user", name: "alice" },
  address: "203.0.113.9",
  action: "PUT /upack/:feed/upload",
  object: "feed=main",
  status: 201,
  outcome: "success",
  requestId: `req-${at}`,
  ...overrides,
});

describe.skipIf(!postgresInstalled())("audit log on PostgreSQL", () => {
  let node: NodeDatabase;
  let other: NodeDatabase;
  let now = new Date("2025-03-01T00:00:00.000Z");
  const clock = { now: () => now };
  let log: AuditLog;
  let otherLog: AuditLog;

  beforeAll(async () => {
    const url = await testPostgres().createDatabase();
    node = await openNodeDatabase({ url, nodeId: "test", migrate: true });
    other = await openNodeDatabase({ url, nodeId: "other" });
    log = createAuditLog({ db: node.db, clock, retentionDays: 30 });
    otherLog = createAuditLog({ db: other.db, clock, retentionDays: 30 });
  });
  afterAll(async () => {
    log?.close();
    otherLog?.close();
    await log?.flush();
    await otherLog?.flush();
    await other?.close();
    await node?.close();
  });

  it("appends quietly, and a page reads this node's writes and another node's", async () => {
    const before = node.watch.version();
    log.append(entry("2025-02-27T10:00:00.000Z"));
    log.append(entry("2025-02-27T10:00:01.000Z", { action: "DELETE /api/webhooks/:id", object: "id=3" }));
    // Written before the other node's record, so that the ids (the page's order) follow the times.
    await log.flush();
    otherLog.append(entry("2025-02-27T10:00:02.000Z", { actor: { kind: "system-key", name: "ci" }, status: 403 }));
    await otherLog.flush();
    const { records, next } = await log.page({}, 2);
    expect(records.map((record) => record.at)).toEqual(["2025-02-27T10:00:02.000Z", "2025-02-27T10:00:01.000Z"]);
    expect(next).toBe(records[1]?.id);
    expect((await log.page({ after: next as number }, 2)).records.map((record) => record.requestId)).toEqual([
      "req-2025-02-27T10:00:00.000Z",
    ]);
    expect((await log.page({ actor: "ci" }, 10)).records).toMatchObject([{ status: 403, outcome: "success" }]);
    expect((await log.page({ action: "DELETE" }, 10)).records).toMatchObject([{ object: "id=3" }]);
    // No cache reads audit records: the writes moved no version and notified no node.
    await sleep(100);
    expect(node.watch.version()).toBe(before);
  });

  it("exports every matching record as JSON lines, newest first", async () => {
    let text = "";
    for await (const lines of log.exportLines({ actor: "alice" })) text += lines;
    const exported = text
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { at: string });
    expect(exported.map((record) => record.at)).toEqual(["2025-02-27T10:00:01.000Z", "2025-02-27T10:00:00.000Z"]);
  });

  it("prunes past the retention period once, when two nodes prune at once", async () => {
    log.append(entry("2025-01-01T00:00:00.000Z"));
    log.append(entry("2025-01-02T00:00:00.000Z"));
    await log.flush();
    const pruned = await Promise.all([log.prune(), otherLog.prune()]);
    expect(pruned[0] + pruned[1]).toBe(2);
    expect((await log.page({}, 10)).records).toHaveLength(3);
    const forever = createAuditLog({ db: node.db, clock, retentionDays: 0 });
    expect(await forever.prune()).toBe(0);
    forever.close();
  });

  it("prunes on its schedule at once", async () => {
    otherLog.append(entry("2025-01-15T00:00:00.000Z"));
    await otherLog.flush();
    const errors: unknown[] = [];
    const stop = log.schedulePruning((error) => errors.push(error));
    try {
      for (let i = 0; i < 100 && (await log.page({ to: "2025-02-01T00:00:00.000Z" }, 1)).records.length > 0; i++)
        await sleep(20);
      expect((await log.page({ to: "2025-02-01T00:00:00.000Z" }, 1)).records).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      stop();
    }
  });

  it("moves the pruning cutoff forward, and a later page still reads what is kept", async () => {
    now = new Date("2025-03-31T00:00:00.000Z");
    expect(await otherLog.prune()).toBe(3);
    expect((await log.page({}, 10)).records).toEqual([]);
  });

  it("numbers batches in the order they were appended, even when the first batch's write is slow", async () => {
    // The first INSERT into audit_records waits, before drawing its ids, for a lock this test holds.
    const holder = await node.db.pool.connect();
    const run = (sql: string) => holder.query(sql);
    await run("CREATE SEQUENCE audit_gate_inserts");
    await run(`CREATE FUNCTION audit_gate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF nextval('audit_gate_inserts') = 1 THEN PERFORM pg_advisory_xact_lock(4242); END IF; RETURN NULL; END $$`);
    await run(
      "CREATE TRIGGER audit_gate BEFORE INSERT ON audit_records FOR EACH STATEMENT EXECUTE FUNCTION audit_gate()",
    );
    await run("SELECT pg_advisory_lock(4242)");
    try {
      log.append(entry("2025-03-30T00:00:01.000Z", { action: "POST /gate", requestId: "first" }));
      const first = log.flush();
      await expect
        .poll(async () => (await run("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rowCount)
        .toBe(1);
      log.append(entry("2025-03-30T00:00:02.000Z", { action: "POST /gate", requestId: "second" }));
      const second = log.flush();
      // Time enough for a second batch written beside the first to draw its ids first.
      await sleep(300);
      await run("SELECT pg_advisory_unlock(4242)");
      await Promise.all([first, second]);
      const { records } = await log.page({ action: "POST /gate" }, 10);
      expect(records.map((record) => record.requestId)).toEqual(["second", "first"]);
    } finally {
      await run("SELECT pg_advisory_unlock_all()");
      await run("DROP TRIGGER audit_gate ON audit_records");
      await run("DROP FUNCTION audit_gate()");
      await run("DROP SEQUENCE audit_gate_inserts");
      holder.release();
    }
  });
});
