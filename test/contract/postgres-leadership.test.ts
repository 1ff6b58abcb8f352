import net from "node:net";
import pg from "pg";
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { ADVISORY_LOCKS, WHARF_LOCK_SPACE } from "../../src/storage/postgres/advisory-locks.js";
import {
  createLeadership,
  leaseApplicationName,
  type Leadership,
  type LeadershipOptions,
} from "../../src/storage/postgres/leadership.js";
import { startClusterNodeProcess } from "../helpers/cluster-node-process.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { type SharedPostgres, testPostgres } from "../helpers/shared-postgres.js";

/**
 * Singletons by advisory lock (research: next-areas.md 4.4) against a real PostgreSQL: one leader
 * per key, handover when the leader closes, is terminated, or its process is killed, and never two
 * sessions of this process believing they lead at once. Short retry and check intervals keep the
 * handovers quick; the check timeout stays generous, so that a busy machine does not make a
 * healthy leader give up.
 */
const TIMINGS = { retryMs: 100, checkMs: 200, checkTimeoutMs: 3_000 } as const;
/** How long a handover may take here: a retry interval, on a slow machine running other tests. */
const HANDOVER_DEADLINE_MS = 5_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(10);
  }
  return Date.now() - started;
}

const leadersAmong = (leaderships: readonly Leadership[]) => leaderships.filter((l) => l.isLeader());

/** Reads isLeader() of every leadership every few milliseconds; the most that were ever true at once. */
function sampleLeaders(leaderships: readonly Leadership[]): { samples: () => number; mostAtOnce: () => number } {
  let samples = 0;
  let mostAtOnce = 0;
  const timer = setInterval(() => {
    samples++;
    mostAtOnce = Math.max(mostAtOnce, leadersAmong(leaderships).length);
  }, 2);
  return {
    samples: () => samples,
    mostAtOnce: () => {
      clearInterval(timer);
      return mostAtOnce;
    },
  };
}

/**
 * A TCP relay in front of PostgreSQL that can be cut as a network partition cuts: after cut(),
 * nothing passes either way and nothing is closed, on either side; new connections are accepted
 * and left silent. dropServerSide() then closes the server's ends, as the server's keepalive would.
 */
interface Partition {
  readonly url: string;
  cut(): void;
  dropServerSide(): void;
  close(): Promise<void>;
}

async function startPartition(target: string): Promise<Partition> {
  const targetUrl = new URL(target);
  const serverSides = new Set<net.Socket>();
  const nodeSides = new Set<net.Socket>();
  let cut = false;
  const relay = net.createServer((nodeSide) => {
    nodeSides.add(nodeSide);
    nodeSide.on("error", () => {});
    if (cut) return;
    const serverSide = net.connect(Number(targetUrl.port), targetUrl.hostname);
    serverSides.add(serverSide);
    serverSide.on("error", () => {});
    const forward = (from: net.Socket, to: net.Socket) => {
      from.on("data", (chunk: Buffer) => {
        if (!cut) to.write(chunk);
      });
      from.on("close", () => {
        if (!cut) to.destroy();
      });
    };
    forward(nodeSide, serverSide);
    forward(serverSide, nodeSide);
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const url = new URL(target);
  url.port = String((relay.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    cut: () => void (cut = true),
    dropServerSide() {
      for (const socket of serverSides) socket.destroy();
    },
    async close() {
      for (const socket of [...serverSides, ...nodeSides]) socket.destroy();
      await new Promise((resolve) => relay.close(resolve));
    },
  };
}

describe.skipIf(!postgresInstalled())("leadership by PostgreSQL advisory lock", () => {
  let server: SharedPostgres;
  let url: string;
  let admin: pg.Client;
  const open: Leadership[] = [];
  const errors: Error[] = [];

  beforeAll(async () => {
    server = testPostgres();
    url = await server.createDatabase();
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });

  afterAll(async () => {
    await Promise.all(open.map((l) => l.close()));
    await admin?.end();
  });

  function lease(nodeId: string, key: number, extra: Partial<LeadershipOptions> = {}): Leadership {
    const leadership = createLeadership({
      url,
      name: "test",
      key,
      nodeId,
      ...TIMINGS,
      onError: (error) => errors.push(error),
      ...extra,
    });
    open.push(leadership);
    return leadership;
  }

  /** The application_name of the session that holds the lock for `key`, if any. */
  async function lockHolder(key: number): Promise<{ applicationName: string; pid: number } | undefined> {
    const result = await admin.query<{ application_name: string; pid: number }>(
      `SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2`,
      [WHARF_LOCK_SPACE, key],
    );
    const row = result.rows[0];
    return row === undefined ? undefined : { applicationName: row.application_name, pid: row.pid };
  }

  it("lets exactly one of three sessions lead, and hands over to exactly one other when it closes", async () => {
    const key = ADVISORY_LOCKS.blobGc;
    let othersLedDuringOnLose = false;
    let nodes: Leadership[] = [];
    const gains = new Map<string, number>();
    const make = (id: string) =>
      lease(`close-${id}`, key, {
        onGain: () => void gains.set(id, (gains.get(id) ?? 0) + 1),
        // close() awaits this before it releases the lock: nobody else may start meanwhile.
        onLose: async () => {
          await sleep(300);
          if (leadersAmong(nodes).length > 0) othersLedDuringOnLose = true;
        },
      });
    nodes = ["a", "b", "c"].map(make);
    const sampler = sampleLeaders(nodes);
    for (const node of nodes) node.start();

    await waitFor(() => leadersAmong(nodes).length === 1, HANDOVER_DEADLINE_MS, "a leader");
    await sleep(500); // the others keep trying every 100 ms meanwhile
    expect(leadersAmong(nodes)).toHaveLength(1);
    const first = leadersAmong(nodes)[0] as Leadership;
    expect(await lockHolder(key)).toBeDefined();

    await first.close();
    expect(first.isLeader()).toBe(false);
    expect(othersLedDuringOnLose).toBe(false);
    const rest = nodes.filter((node) => node !== first);
    await waitFor(() => leadersAmong(rest).length === 1, HANDOVER_DEADLINE_MS, "a new leader after close()");
    await sleep(300);
    expect(leadersAmong(rest)).toHaveLength(1);

    expect(sampler.samples()).toBeGreaterThan(50);
    expect(sampler.mostAtOnce()).toBe(1);
    expect([...gains.values()]).toEqual([1, 1]);
    await Promise.all(nodes.map((node) => node.close()));
    expect(await lockHolder(key)).toBeUndefined();
  });

  it("lets different sessions lead different keys at once", async () => {
    const retention = lease("keys-a", ADVISORY_LOCKS.retention);
    const gc = lease("keys-b", ADVISORY_LOCKS.blobGc);
    retention.start();
    gc.start();
    await waitFor(() => retention.isLeader() && gc.isLeader(), HANDOVER_DEADLINE_MS, "both keys led");
    const holders = [await lockHolder(ADVISORY_LOCKS.retention), await lockHolder(ADVISORY_LOCKS.blobGc)];
    expect(holders.map((h) => h?.applicationName)).toEqual([
      leaseApplicationName("keys-a", "test"),
      leaseApplicationName("keys-b", "test"),
    ]);
    expect(holders[0]?.pid).not.toBe(holders[1]?.pid);
    await Promise.all([retention.close(), gc.close()]);
  });

  it("hands over when the leader's backend is terminated, and the old leader leads again only with the lock", async () => {
    const key = ADVISORY_LOCKS.scheduler;
    const events: string[] = [];
    const ids = ["a", "b", "c"];
    const nodes = ids.map((id) =>
      lease(`term-${id}`, key, {
        onGain: () => void events.push(`${id} gain`),
        onLose: () => void events.push(`${id} lose`),
      }),
    );
    // No sampling of isLeader() here: the server frees the lock as it ends the session, before the
    // old leader hears of it, so for that moment two may believe they lead (a lease without fencing:
    // docs/cluster-mode.md). What holds: one holder of the lock, and the old leader's onLose.
    for (const node of nodes) node.start();
    await waitFor(() => leadersAmong(nodes).length === 1, HANDOVER_DEADLINE_MS, "a leader");
    const old = leadersAmong(nodes)[0] as Leadership;
    const oldId = ids[nodes.indexOf(old)] as string;
    const oldSession = await lockHolder(key);
    expect(oldSession?.applicationName).toBe(leaseApplicationName(`term-${oldId}`, "test"));

    const terminated = await admin.query<{ done: boolean }>(
      "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1",
      [leaseApplicationName(`term-${oldId}`, "test")],
    );
    expect(terminated.rows.map((r) => r.done)).toEqual([true]);
    await waitFor(() => events.includes(`${oldId} lose`), HANDOVER_DEADLINE_MS, "onLose of the terminated leader");
    await waitFor(
      () => leadersAmong(nodes).length === 1 && !old.isLeader(),
      HANDOVER_DEADLINE_MS,
      "another leader after the termination",
    );
    const successor = leadersAmong(nodes)[0] as Leadership;
    const successorId = ids[nodes.indexOf(successor)] as string;
    expect((await lockHolder(key))?.applicationName).toBe(leaseApplicationName(`term-${successorId}`, "test"));

    // The old leader has a new session by now and keeps trying, but the lock is taken.
    await waitFor(
      async () =>
        (
          await admin.query("SELECT 1 FROM pg_stat_activity WHERE application_name = $1", [
            leaseApplicationName(`term-${oldId}`, "test"),
          ])
        ).rowCount === 1,
      HANDOVER_DEADLINE_MS,
      "the old leader's new session",
    );
    await sleep(500);
    expect(old.isLeader()).toBe(false);

    // With the others gone it leads again, on its new session's lock.
    await Promise.all(nodes.filter((node) => node !== old).map((node) => node.close()));
    await waitFor(() => old.isLeader(), HANDOVER_DEADLINE_MS, "the old leader leading again");
    const again = await lockHolder(key);
    expect(again?.applicationName).toBe(leaseApplicationName(`term-${oldId}`, "test"));
    expect(again?.pid).not.toBe(oldSession?.pid);

    const oldEvents = events.filter((event) => event.startsWith(`${oldId} `));
    expect(oldEvents).toEqual([`${oldId} gain`, `${oldId} lose`, `${oldId} gain`]);
    // Each node's own gains and loses alternate, starting with a gain.
    for (const id of ids) {
      const own = events.filter((event) => event.startsWith(`${id} `)).map((event) => event.split(" ")[1]);
      expect(
        own.every((what, i) => what === (i % 2 === 0 ? "gain" : "lose")),
        `${id}: ${own.join(", ")}`,
      ).toBe(true);
    }
    await old.close();
  });

  it("hands over when the leading process is killed", async () => {
    const key = ADVISORY_LOCKS.connectorHealth;
    const child = await startClusterNodeProcess({
      url,
      nodeId: "killed-child",
      lease: { name: "test", key, retryMs: TIMINGS.retryMs, checkMs: TIMINGS.checkMs },
    });
    try {
      // tsx compiles the helper first: slow on a busy machine.
      await child.waitForLine("leading", 30_000);
      const survivor = lease("survivor", key);
      survivor.start();
      await sleep(1_000);
      expect(survivor.isLeader()).toBe(false);
      expect((await lockHolder(key))?.applicationName).toBe(leaseApplicationName("killed-child", "test"));

      await child.kill();
      const took = await waitFor(() => survivor.isLeader(), HANDOVER_DEADLINE_MS, "the survivor leading");
      expect(took).toBeLessThan(HANDOVER_DEADLINE_MS);
      expect((await lockHolder(key))?.applicationName).toBe(leaseApplicationName("survivor", "test"));
      await survivor.close();
    } finally {
      await child.kill();
    }
  });

  it("stops a partitioned leader on its own, before the server lets another session take the lock", async () => {
    const key = ADVISORY_LOCKS.configurationChecks;
    const partition = await startPartition(url);
    const events: string[] = [];
    const cutOff = lease("partitioned", key, {
      url: partition.url,
      checkTimeoutMs: 1_500,
      onGain: () => void events.push("partitioned gain"),
      onLose: () => void events.push("partitioned lose"),
    });
    const other = lease("other-side", key, {
      onGain: () => void events.push("other gain"),
      onLose: () => void events.push("other lose"),
    });
    const sampler = sampleLeaders([cutOff, other]);
    try {
      cutOff.start();
      await waitFor(() => cutOff.isLeader(), HANDOVER_DEADLINE_MS, "the node behind the relay leading");
      other.start();

      partition.cut();
      // It hears nothing from the server, so it must notice by its check timing out: checkMs + checkTimeoutMs.
      const noticed = await waitFor(() => !cutOff.isLeader(), 5_000, "the partitioned leader giving up");
      expect(noticed).toBeLessThan(TIMINGS.checkMs + 1_500 + 2_000);
      // The server still holds its session, and with it the lock: nobody leads.
      await sleep(1_000);
      expect(other.isLeader()).toBe(false);
      expect((await lockHolder(key))?.applicationName).toBe(leaseApplicationName("partitioned", "test"));

      // The server's keepalive gives up on the silent session: the lock moves to the other side.
      partition.dropServerSide();
      await waitFor(() => other.isLeader(), HANDOVER_DEADLINE_MS, "the other side leading");
      expect(events.slice(0, 3)).toEqual(["partitioned gain", "partitioned lose", "other gain"]);
      expect(sampler.mostAtOnce()).toBe(1);
      expect(errors.some((error) => /timeout/i.test(error.message))).toBe(true);
    } finally {
      await Promise.all([cutOff.close(), other.close()]);
      await partition.close();
    }
  });

  it("reports an unreachable database without crashing, and closes", async () => {
    const reported: Error[] = [];
    const nowhere = createLeadership({
      url: "postgres://wharf@127.0.0.1:1/none",
      name: "test",
      key: ADVISORY_LOCKS.retention,
      nodeId: "nowhere",
      ...TIMINGS,
      onError: (error) => reported.push(error),
    });
    nowhere.start();
    await waitFor(() => reported.length >= 2, HANDOVER_DEADLINE_MS, "two failed attempts reported");
    expect(nowhere.isLeader()).toBe(false);
    await nowhere.close();
  });

  it("reported no errors from the healthy sessions beyond the terminated and partitioned ones", () => {
    // The terminated session reports its end (57P01), the partitioned one its timeouts; nothing else.
    const unexpected = errors.filter((error) => !/terminat|timeout/i.test(error.message));
    expect(unexpected.map((error) => error.message)).toEqual([]);
  });
});
