import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import { createJobClaims } from "../../src/storage/postgres/job-claims.js";
import { migratePostgres } from "../../src/storage/postgres/migrations.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { type SharedPostgres, testPostgres } from "../helpers/shared-postgres.js";

/** Jobs shared by the nodes of a cluster: each taken once, and failed, never rerun, when its node is gone. */

const INTERRUPTED = "The node running this job stopped answering; it did not finish.";
const at = () => new Date().toISOString();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!postgresInstalled())("job claims on PostgreSQL", () => {
  let server: SharedPostgres;
  let url: string;
  const pools: pg.Pool[] = [];
  const pool = () => {
    const opened = openPostgres(url, { applicationName: "wharf test" });
    pools.push(opened);
    return opened;
  };
  let db: pg.Pool;
  const enqueue = async (count: number, kind = "deploy", notBefore: string | null = null) => {
    const result = await db.query<{ id: number }>(
      `INSERT INTO jobs (kind, payload, status, created_at, not_before)
       SELECT $1, '{}', 'pending', $2, $3 FROM generate_series(1, $4) RETURNING id`,
      [kind, at(), notBefore, count],
    );
    return result.rows.map((row) => row.id);
  };
  const job = async (id: number) =>
    (await db.query<{ status: string; attempts: number }>("SELECT status, attempts FROM jobs WHERE id = $1", [id]))
      .rows[0];

  beforeAll(async () => {
    server = testPostgres();
    url = await server.createDatabase();
    db = pool();
    await migratePostgres(db);
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
  });

  it("gives each of 400 jobs to exactly one of four nodes claiming at once", async () => {
    const ids = await enqueue(400);
    const nodes = [1, 2, 3, 4].map((n) => createJobClaims(pool(), { nodeId: `node-${n}`, leaseMs: 60_000 }));
    const claimedBy = await Promise.all(
      nodes.map(async (node, n) => {
        const mine: number[] = [];
        for (;;) {
          const claimed = await node.claimNext(at());
          if (claimed === undefined) return mine;
          mine.push(claimed.id);
          // Ends some, keeps others running: a finished job must not come back either.
          if (claimed.id % 2 === n % 2) await node.finish(claimed.id, "succeeded", at());
        }
      }),
    );
    const all = claimedBy.flat().sort((a, b) => a - b);
    expect(all).toEqual(ids);
    // Work was spread: no node took them all.
    for (const mine of claimedBy) expect(mine.length).toBeLessThan(400);
    const attempts = await db.query<{ attempts: number; n: number }>(
      "SELECT attempts, count(*)::int AS n FROM jobs WHERE id = ANY ($1::bigint[]) GROUP BY attempts",
      [ids],
    );
    expect(attempts.rows).toEqual([{ attempts: 1, n: 400 }]);
  });

  it("fails a job whose node stopped renewing, once, and never hands it out again", async () => {
    const [id] = (await enqueue(1, "lapsing")) as [number];
    const dying = createJobClaims(pool(), { nodeId: "dying", leaseMs: 300 });
    const survivor = createJobClaims(pool(), { nodeId: "survivor", leaseMs: 60_000 });
    expect((await dying.claimNext(at()))?.id).toBe(id);
    expect(await survivor.failLapsed(at(), INTERRUPTED)).toEqual([]);
    await sleep(450);
    const [first, second] = await Promise.all([
      survivor.failLapsed(at(), INTERRUPTED),
      survivor.failLapsed(at(), INTERRUPTED),
    ]);
    expect([...first, ...second]).toEqual([id]);
    expect(await job(id)).toEqual({ status: "failed", attempts: 1 });
    const log = await db.query("SELECT level, message FROM job_log WHERE job_id = $1", [id]);
    expect(log.rows).toEqual([{ level: "error", message: INTERRUPTED }]);
    expect(await survivor.claimNext(at())).toBeUndefined();
    // The node comes back from a long pause: its late ending changes nothing.
    expect(await dying.renew([id])).toEqual([]);
    expect(await dying.finish(id, "succeeded", at())).toBeUndefined();
    expect(await job(id)).toEqual({ status: "failed", attempts: 1 });
  });

  it("keeps a job whose node renews its lease, and lets only that node end it", async () => {
    const [id] = (await enqueue(1, "long")) as [number];
    const runner = createJobClaims(pool(), { nodeId: "runner", leaseMs: 400 });
    const other = createJobClaims(pool(), { nodeId: "other", leaseMs: 400 });
    expect((await runner.claimNext(at()))?.id).toBe(id);
    for (let i = 0; i < 6; i++) {
      await sleep(120);
      expect(await runner.renew([id])).toEqual([id]);
      expect(await other.failLapsed(at(), INTERRUPTED)).toEqual([]);
    }
    expect(await other.renew([id])).toEqual([]);
    expect(await other.finish(id, "failed", at())).toBeUndefined();
    expect((await runner.finish(id, "warned", at()))?.status).toBe("warned");
    expect(await job(id)).toEqual({ status: "warned", attempts: 1 });
  });

  it("leaves jobs not yet due and kinds at their limit for later", async () => {
    const later = new Date(Date.now() + 60_000).toISOString();
    const [deferred] = (await enqueue(1, "deferred", later)) as [number];
    const [limited] = (await enqueue(1, "limited")) as [number];
    const node = createJobClaims(pool(), { nodeId: "picky", leaseMs: 60_000 });
    expect(await node.claimNext(at(), ["limited"])).toBeUndefined();
    expect((await node.claimNext(at()))?.id).toBe(limited);
    expect((await node.claimNext(new Date(Date.now() + 120_000).toISOString()))?.id).toBe(deferred);
  });
});
