import { performance } from "node:perf_hooks";
import { PostgresChangeWatch } from "../src/storage/postgres/change-feed.js";
import { openPostgres } from "../src/storage/postgres/connection.js";
import { migratePostgres } from "../src/storage/postgres/migrations.js";
import { startPostgres } from "../test/helpers/postgres.js";

/**
 * Cross-node cache invalidation on PostgreSQL (research: next-areas.md 4.4): how long after node A
 * commits a write node B's ChangeWatch version moves, i.e. how long B may still serve a cached
 * answer that A's write made stale. Each iteration, A updates a row of `feeds` in a transaction
 * and commits it; the time is taken when B's listener (its own connection, in this same process)
 * handles the notification, measured from COMMIT returning to A (negative when B heard first:
 * counted, and reported as 0) and from just before A sent COMMIT. Beside it, in the same
 * iterations, the round trip of a plain `SELECT 1` on a pool connection, as the yardstick.
 * The server is test/helpers/postgres.ts's private one on loopback, with fsync and
 * synchronous_commit off: a real server's COMMIT waits for its disk, its NOTIFY delivery does not.
 * Not a test: one JSON object on stdout, progress on stderr.
 *
 *   npx tsx bench/cluster-invalidation.ts
 */
const iterations = Number(process.env.INVALIDATION_ITERATIONS ?? 1_000);
const warmup = Number(process.env.INVALIDATION_WARMUP ?? 100);
/** How long to wait for a notification before counting it as missed (the bench asserts nothing). */
const MISSED_AFTER_MS = 5_000;
const log = (line: string) => process.stderr.write(`${line}\n`);

log("starting PostgreSQL");
const server = await startPostgres();
const url = await server.createDatabase();
const poolA = openPostgres(url, { applicationName: "wharf bench node-a" });
const watches: PostgresChangeWatch[] = [];

try {
  await migratePostgres(poolA);
  await poolA.query(
    `INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at)
     VALUES ('bench', 'universal', 'bench', '{}', $1, $1)`,
    [new Date().toISOString()],
  );
  // Both nodes listen, as in a real two-node cluster: A hears its own notifications too.
  for (const name of ["node-a", "node-b"]) {
    const watch = new PostgresChangeWatch({
      url,
      applicationName: `wharf bench ${name} changes`,
      onError: (e) => log(`${name}: ${e.message}`),
    });
    await watch.start();
    watches.push(watch);
  }
  const watchB = watches[1] as PostgresChangeWatch;
  const client = await poolA.connect();

  const selectOne: number[] = [];
  const commitRoundTrip: number[] = [];
  const fromCommitReturned: number[] = [];
  const fromCommitSent: number[] = [];
  let heardBeforeCommitReturned = 0;
  let missed = 0;

  try {
    for (let i = 0; i < warmup + iterations; i++) {
      const measured = i >= warmup;
      if (i === warmup) log(`warmed up; measuring ${iterations} iterations`);

      const selectStarted = performance.now();
      await poolA.query("SELECT 1");
      const selectMs = performance.now() - selectStarted;

      await client.query("BEGIN");
      await client.query("UPDATE feeds SET modified_at = $1 WHERE storage_key = 'bench'", [new Date().toISOString()]);
      // Heard = B's version moved: the watch counts a notification before it tells its listeners.
      const heard = nextChange(watchB);
      const commitSent = performance.now();
      await client.query("COMMIT");
      const commitReturned = performance.now();
      const heardAt = await heard;

      if (!measured) continue;
      selectOne.push(selectMs);
      commitRoundTrip.push(commitReturned - commitSent);
      if (heardAt === undefined) {
        missed++;
        continue;
      }
      if (heardAt < commitReturned) heardBeforeCommitReturned++;
      fromCommitReturned.push(Math.max(0, heardAt - commitReturned));
      fromCommitSent.push(heardAt - commitSent);
      if ((i - warmup + 1) % 250 === 0) log(`${i - warmup + 1} / ${iterations}`);
    }
  } finally {
    client.release();
  }

  const serverVersion = (await poolA.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v;
  process.stdout.write(
    `${JSON.stringify(
      {
        postgres: serverVersion,
        iterations,
        missed,
        // The answer: how long after A's COMMIT returned B may still have served the stale entry.
        invalidationAfterCommitReturnedMs: summary(fromCommitReturned),
        heardBeforeCommitReturned,
        invalidationAfterCommitSentMs: summary(fromCommitSent),
        commitRoundTripMs: summary(commitRoundTrip),
        selectOneRoundTripMs: summary(selectOne),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await Promise.all(watches.map((watch) => watch.close()));
  await poolA.end();
  await server.stop();
}

/** When (performance.now()) the watch next hears of a change to `feeds`; undefined if it does not within MISSED_AFTER_MS. */
function nextChange(watch: PostgresChangeWatch): Promise<number | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(undefined), MISSED_AFTER_MS);
    const stop = watch.onChange((table) => {
      if (table === "feeds") done(performance.now());
    });
    function done(at: number | undefined) {
      clearTimeout(timer);
      stop();
      resolve(at);
    }
  });
}

function summary(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) * 1000) / 1000;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
}
