import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CHANGES_CHANNEL,
  markQuiet,
  PostgresChangeWatch,
  TABLES_NO_CACHE_READS,
} from "../../src/storage/postgres/change-feed.js";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import { readRows, writeRows } from "../../src/storage/postgres/database.js";
import { migratePostgres } from "../../src/storage/postgres/migrations.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { type SharedPostgres, testPostgres } from "../helpers/shared-postgres.js";

/**
 * Cross-node cache invalidation on a real PostgreSQL (migrations/postgres/0002, storage/postgres/
 * change-feed.ts): two nodes on one database, each with its own pool and watch, as two Wharf
 * processes would have. The bounds are correctness checks (a notification that never comes), not
 * timings: bench/cluster-invalidation.ts measures those.
 */

interface Node {
  readonly pool: pg.Pool;
  readonly watch: PostgresChangeWatch;
  readonly listenerName: string;
}

const NOTIFIED_WITHIN_MS = 1_000;

/**
 * Tables without 0002's triggers: the migrations' ledger (only migrations write it, and a node
 * refuses any schema but its own), and tables no cache reads that are written every few seconds,
 * whose every write would otherwise empty every node's caches: heartbeats, job leases and blob holds.
 */
const UNNOTIFIED_TABLES = [
  "wharf_schema_migrations",
  "cluster_nodes",
  "job_leases",
  "blob_holds",
  "asset_multipart_part_blobs",
  "asset_multipart_claims",
  "agent_polls",
];

describe.skipIf(!postgresInstalled())("PostgreSQL change notifications", () => {
  let server: SharedPostgres;
  let url: string;
  let nodeA: Node;
  let nodeB: Node;
  /** A node as `wharf serve` opens it (node-database.ts: its watch follows its pool), with a pool of one connection. */
  let nodeD: NodeDatabase;
  const errors: Error[] = [];
  const watches: PostgresChangeWatch[] = [];

  const startWatch = async (listenerName: string, options: { heartbeatMs?: number; trustForMs?: number } = {}) => {
    const watch = new PostgresChangeWatch({
      url,
      applicationName: listenerName,
      onError: (e) => errors.push(e),
      ...options,
    });
    watches.push(watch);
    await watch.start();
    return watch;
  };
  const startNode = async (name: string): Promise<Node> => {
    const listenerName = `wharf ${name} changes`;
    const pool = openPostgres(url, { applicationName: `wharf ${name}` });
    return { pool, watch: await startWatch(listenerName), listenerName };
  };

  /** A real write to a real table of the schema: the seeded feed, renamed to itself. */
  const FEED_KEY = "change-feed-test";
  const writeFeed = (db: pg.Pool | pg.ClientBase) =>
    db.query("UPDATE feeds SET name = name WHERE storage_key = $1", [FEED_KEY]);

  /**
   * The tables notified to `watch` because of `action`. Notifications arrive in commit order, so
   * everything the action caused has arrived once a marker notified after it has: no waiting for
   * "long enough" to prove that nothing came. A marker sent first leaves out what earlier tests'
   * writes notified and the watch had not heard yet.
   */
  const notifiedDuring = async (watch: PostgresChangeWatch, action: () => Promise<unknown>): Promise<string[]> => {
    const seen: string[] = [];
    const stop = watch.onChange((table) => seen.push(table));
    const mark = async () => {
      const marker = `marker ${randomUUID()}`;
      await nodeA.pool.query("SELECT pg_notify($1, $2)", [CHANGES_CHANNEL, marker]);
      await waitUntil(() => seen.includes(marker), "the marker notification");
      return marker;
    };
    try {
      const start = await mark();
      await action();
      const end = await mark();
      return seen.slice(seen.indexOf(start) + 1, seen.indexOf(end));
    } finally {
      stop();
    }
  };

  const listenerPids = async (listenerName: string) =>
    (
      await nodeA.pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [
        listenerName,
      ])
    ).rows.map((row) => row.pid);

  beforeAll(async () => {
    server = testPostgres();
    url = await server.createDatabase();
    const migrator = openPostgres(url, { applicationName: "wharf test migrate" });
    try {
      await migratePostgres(migrator);
      await migrator.query(
        `INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at)
         VALUES ('notified', 'universal', $1, '{}', '2030-01-01T00:00:00.000Z', '2030-01-01T00:00:00.000Z')`,
        [FEED_KEY],
      );
    } finally {
      await migrator.end();
    }
    nodeA = await startNode("node-a");
    nodeB = await startNode("node-b");
    nodeD = await openNodeDatabase({ url, nodeId: "node-d", poolSize: 1, onError: (e) => errors.push(e) });
  });

  afterAll(async () => {
    await nodeD?.close();
    await Promise.all(watches.map((watch) => watch.close()));
    await Promise.all([nodeA, nodeB].map((node) => node?.pool.end()));
  });

  it("moves another node's version when a write commits there", async () => {
    const before = nodeB.watch.version();
    await writeFeed(nodeA.pool);
    await waitUntil(() => nodeB.watch.version() !== before, "node B sees node A's commit");
    const after = nodeB.watch.version();
    expect(nodeB.watch.version()).toBe(after); // and settles: nothing else was written
  });

  it("notifies at COMMIT, once per table however many statements", async () => {
    const client = await nodeA.pool.connect();
    try {
      const beforeCommit = await notifiedDuring(nodeB.watch, async () => {
        await client.query("BEGIN");
        await writeFeed(client);
        await writeFeed(client);
      });
      expect(beforeCommit).toEqual([]);
      expect(await notifiedDuring(nodeB.watch, () => client.query("COMMIT"))).toEqual(["feeds"]);
    } finally {
      client.release();
    }
  });

  it("does not notify a write that rolled back", async () => {
    const client = await nodeA.pool.connect();
    try {
      const notified = await notifiedDuring(nodeB.watch, async () => {
        await client.query("BEGIN");
        await writeFeed(client);
        await client.query("ROLLBACK");
      });
      expect(notified).toEqual([]);
    } finally {
      client.release();
    }
  });

  it("does not notify a quiet transaction, and the next transaction on the connection is not quiet", async () => {
    const client = await nodeA.pool.connect();
    try {
      await expect(markQuiet(client)).rejects.toThrow(/open transaction/);
      const quiet = await notifiedDuring(nodeB.watch, async () => {
        await client.query("BEGIN");
        await markQuiet(client);
        await writeFeed(client);
        await client.query("COMMIT");
      });
      expect(quiet).toEqual([]);
      const next = await notifiedDuring(nodeB.watch, async () => {
        await client.query("BEGIN");
        await writeFeed(client);
        await client.query("COMMIT");
      });
      expect(next).toEqual(["feeds"]);
    } finally {
      client.release();
    }
  });

  it("notifies a write from outside Wharf, as an administrator's psql would make", async () => {
    const psql = new pg.Client({ connectionString: url, application_name: "psql" });
    await psql.connect();
    try {
      expect(await notifiedDuring(nodeB.watch, () => writeFeed(psql))).toEqual(["feeds"]);
    } finally {
      await psql.end();
    }
  });

  it("moves the version at once when this node commits, before its own notification arrives", () => {
    const before = nodeA.watch.version();
    expect(nodeA.watch.version()).toBe(before);
    nodeA.watch.localCommit();
    expect(nodeA.watch.version()).not.toBe(before);
  });

  it("never repeats a version while it is not listening", () => {
    const unstarted = new PostgresChangeWatch({ url, applicationName: "wharf never started" });
    expect(unstarted.version()).not.toBe(unstarted.version());
  });

  it("after losing its connection, never repeats a version until it listens again, then settles on a new one", async () => {
    const [pid, ...others] = await listenerPids(nodeB.listenerName);
    expect(others).toEqual([]);
    const handedOut = new Set([nodeB.watch.version()]);
    await nodeA.pool.query("SELECT pg_terminate_backend($1)", [pid]);
    await waitUntil(() => !nodeB.watch.listening, "node B notices its listener is gone");
    for (let i = 0; i < 5; i++) {
      const version = nodeB.watch.version();
      expect(handedOut.has(version)).toBe(false);
      handedOut.add(version);
    }
    // Missed by node B: harmless, since no cache could hit while it was away.
    await writeFeed(nodeA.pool);
    await waitUntil(() => nodeB.watch.listening, "node B listens again", 5_000);
    const settled = nodeB.watch.version();
    expect(handedOut.has(settled)).toBe(false);
    expect(nodeB.watch.version()).toBe(settled);
    expect(await listenerPids(nodeB.listenerName)).not.toContain(pid);
    expect(errors.some((error) => /terminat/i.test(error.message))).toBe(true);
    expect(await notifiedDuring(nodeB.watch, () => writeFeed(nodeA.pool))).toEqual(["feeds"]);
  });

  it("stops vouching for a connection whose server stops answering, and gets a new one", async () => {
    // A backend stopped by SIGSTOP keeps its TCP connection open: what a hung server or a silently
    // dropped network path looks like, which no 'error' or 'end' event reports.
    const watch = await startWatch("wharf node-c changes", { heartbeatMs: 50, trustForMs: 300 });
    const [pid] = await listenerPids("wharf node-c changes");
    if (pid === undefined) throw new Error("no listener found for node C");
    process.kill(pid, "SIGSTOP");
    try {
      await waitUntil(() => watch.version() !== watch.version(), "node C stops vouching");
      await waitUntil(() => !watch.listening, "node C gives the connection up");
      await waitUntil(() => watch.listening, "node C listens again", 5_000);
      expect(await listenerPids("wharf node-c changes")).toContain(pid); // still there, stopped
    } finally {
      process.kill(pid, "SIGCONT");
    }
    const settled = watch.version();
    expect(watch.version()).toBe(settled);
    expect(errors.some((error) => /heartbeat went unanswered/.test(error.message))).toBe(true);
    expect(await notifiedDuring(watch, () => writeFeed(nodeA.pool))).toEqual(["feeds"]);
  });

  it("does not notify for a statement that changed nothing (an idle poll)", async () => {
    const none = await notifiedDuring(nodeB.watch, async () => {
      await nodeA.pool.query("UPDATE feeds SET modified_at = modified_at WHERE id = -1");
      await nodeA.pool.query("DELETE FROM feeds WHERE id = -1");
    });
    expect(none).toEqual([]);
  });

  /** How many notifications of `table` the watch has heard since a marker sent now (as notifiedDuring's first). */
  const countHeard = async (watch: PostgresChangeWatch, table: string) => {
    const marker = `marker ${randomUUID()}`;
    let started = false;
    let heard = 0;
    const stop = watch.onChange((notified) => {
      if (notified === marker) started = true;
      else if (started && notified === table) heard++;
    });
    await nodeA.pool.query("SELECT pg_notify($1, $2)", [CHANGES_CHANNEL, marker]);
    await waitUntil(() => started, "the marker notification");
    return { heard: () => heard, stop };
  };
  const AUDIT_RECORD = `INSERT INTO audit_records (at, actor_kind, actor_name, address, action, object, status, outcome, request_id)
    VALUES ('2030-01-01T00:00:00.000Z', 'key', 'change-feed test', '127.0.0.1', 'test', 'test', 200, 'success', 'test')`;

  it("tells listeners of a table no cache reads without moving the version, and moves it for one a cache reads", async () => {
    expect(TABLES_NO_CACHE_READS.has("audit_records")).toBe(true);
    const audit = await countHeard(nodeB.watch, "audit_records");
    const feeds = await countHeard(nodeB.watch, "feeds");
    try {
      const before = nodeB.watch.version();
      await nodeA.pool.query(AUDIT_RECORD);
      await waitUntil(() => audit.heard() === 1, "node B hears the audit record");
      expect(nodeB.watch.version()).toBe(before);
      await writeFeed(nodeA.pool);
      await waitUntil(() => feeds.heard() === 1, "node B hears the feed's write");
      expect(nodeB.watch.version()).not.toBe(before);
    } finally {
      audit.stop();
      feeds.stop();
    }
  });

  it("counts this node's own commit once: at localCommit, not again when its notification arrives", async () => {
    const own = await countHeard(nodeD.watch, "feeds");
    // The listener's backend, stopped for a moment, sends the notification after localCommit ran:
    // on one machine it often arrives before COMMIT's answer is read, and is counted then.
    const [listener] = await listenerPids("wharf node-d changes");
    if (listener === undefined) throw new Error("no listener found for node D");
    try {
      process.kill(listener, "SIGSTOP");
      let afterWrite: string;
      try {
        const before = nodeD.watch.version();
        await writeRows(nodeD.db, "UPDATE feeds SET name = name WHERE storage_key = $1", [FEED_KEY]);
        afterWrite = nodeD.watch.version();
        expect(afterWrite).not.toBe(before);
        expect(own.heard()).toBe(0);
        // A read on the same connection (a pool of one), as the next request's would be: it writes nothing.
        expect(await readRows(nodeD.db, "SELECT name FROM feeds WHERE storage_key = $1", [FEED_KEY])).toHaveLength(1);
      } finally {
        process.kill(listener, "SIGCONT");
      }
      await waitUntil(() => own.heard() === 1, "node D hears its own commit");
      expect(nodeD.watch.version()).toBe(afterWrite);
      // Another node's commit is not this node's, whatever its connection.
      await writeFeed(nodeA.pool);
      await waitUntil(() => own.heard() === 2, "node D hears node A's commit");
      expect(nodeD.watch.version()).not.toBe(afterWrite);
    } finally {
      own.stop();
    }
  });

  it("counts this node's own notification that arrives before its commit was counted", async () => {
    const own = await countHeard(nodeD.watch, "feeds");
    const client = await nodeD.db.pool.connect();
    try {
      await client.query("BEGIN");
      await writeFeed(client);
      const before = nodeD.watch.version();
      await client.query("COMMIT");
      await waitUntil(() => own.heard() === 1, "node D hears its own commit");
      expect(nodeD.watch.version()).not.toBe(before);
      nodeD.db.committed(client);
    } finally {
      client.release();
      own.stop();
    }
  });

  it("counts a write its connection made without telling, after one it told of", async () => {
    const own = await countHeard(nodeD.watch, "feeds");
    try {
      await writeRows(nodeD.db, "UPDATE feeds SET name = name WHERE storage_key = $1", [FEED_KEY]);
      await waitUntil(() => own.heard() === 1, "node D hears the counted commit");
      const before = nodeD.watch.version();
      // The same connection (a pool of one), used outside database.ts's helpers: nothing counts this write.
      const client = await nodeD.db.pool.connect();
      try {
        await writeFeed(client);
      } finally {
        client.release();
      }
      await waitUntil(() => own.heard() === 2, "node D hears the uncounted commit");
      expect(nodeD.watch.version()).not.toBe(before);
    } finally {
      own.stop();
    }
  });

  it("has the triggers on every table of the migrated schema but the listed exceptions", async () => {
    const tables = await nodeA.pool.query<{ name: string; triggers: string[] }>(
      `SELECT c.relname AS name,
              array(SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
                     WHERE t.tgrelid = c.oid AND t.tgname IN ('wharf_changes', 'wharf_changes_truncate')
                     ORDER BY t.tgname) AS triggers
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
       ORDER BY 1`,
    );
    expect(tables.rows.length).toBeGreaterThan(50);
    const expected = (table: string) =>
      UNNOTIFIED_TABLES.includes(table)
        ? []
        : [
            `CREATE TRIGGER wharf_changes AFTER INSERT OR DELETE OR UPDATE ON public.${table} FOR EACH ROW EXECUTE FUNCTION wharf_notify_change()`,
            `CREATE TRIGGER wharf_changes_truncate AFTER TRUNCATE ON public.${table} FOR EACH STATEMENT EXECUTE FUNCTION wharf_notify_change()`,
          ];
    const wrong = tables.rows.filter((row) => JSON.stringify(row.triggers) !== JSON.stringify(expected(row.name)));
    expect(wrong, "tables without 0002's triggers: writes to them would not invalidate other nodes' caches").toEqual(
      [],
    );
  });
});

/**
 * Every source file naming a table of TABLES_NO_CACHE_READS, as checked when it was put there: a
 * new one may read it into a cache, whose entries that table's writes would then leave stale. Look
 * at what the new file does with it, then add it here (or take the table out of the set).
 */
const CHECKED_READERS: Record<string, readonly string[]> = {
  agent_work: [
    "src/areas/configuration/agent-hub-cluster.ts",
    "src/areas/configuration/agent-work-repository-postgres.ts",
    "src/cli/cluster-import-schema.ts",
  ],
  package_deployments: [
    "src/areas/package-deployment/repository-postgres.ts",
    "src/areas/package-deployment/repository.ts",
    "src/areas/retention/repository-postgres.ts",
    "src/areas/retention/repository.ts",
  ],
  job_log: ["src/jobs/runner-postgres.ts", "src/jobs/runner.ts", "src/storage/postgres/job-claims.ts"],
  webhook_deliveries: ["src/areas/webhooks/repository-postgres.ts", "src/areas/webhooks/repository.ts"],
  lifecycle_events: [
    "src/areas/webhooks/index.ts",
    "src/areas/webhooks/repository-postgres.ts",
    "src/lifecycle/events-postgres.ts",
    "src/lifecycle/events.ts",
  ],
  audit_records: ["src/areas/audit/repository-postgres.ts", "src/areas/audit/repository.ts"],
  retention_runs: ["src/areas/retention/repository-postgres.ts", "src/areas/retention/repository.ts"],
};

describe("tables no cache reads", () => {
  it("are named by no source file but those checked", () => {
    const sources = fs
      .readdirSync("src", { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts"))
      .map((file) => path.join("src", file).split(path.sep).join("/"))
      .filter((file) => file !== "src/storage/postgres/change-feed.ts");
    const texts = new Map(sources.map((file) => [file, fs.readFileSync(file, "utf8")]));
    const readers = Object.fromEntries(
      [...TABLES_NO_CACHE_READS.keys()].map((table) => {
        const word = new RegExp(`\\b${table}\\b`);
        return [table, sources.filter((file) => word.test(texts.get(file) ?? "")).sort()];
      }),
    );
    expect(readers).toEqual(CHECKED_READERS);
  });
});

async function waitUntil(condition: () => boolean, what: string, withinMs = NOTIFIED_WITHIN_MS): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
