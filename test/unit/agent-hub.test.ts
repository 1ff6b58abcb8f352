import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { WorkItem } from "../../src/agent/protocol.js";
import { type AgentHub, type AgentServer, createAgentHub } from "../../src/areas/configuration/agent-hub.js";
import type { ServerTarget, TransportRun } from "../../src/areas/configuration/transport.js";
import { hashApiKey } from "../../src/areas/security/api-key-hash.js";
import type { DesiredItem } from "../../src/drift/model.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { manualClock } from "../helpers/clock.js";

/**
 * The agent hub's rules without HTTP (src/areas/configuration/agent-hub.ts): leases, the offline
 * rule with a clock moved by hand, inactive servers, one poll per server, revocation while a poll
 * is held. The real protocol with real agents is test/integration/config-agent.test.ts.
 */
const LEASE_MS = 300;
const OFFLINE_MS = 60_000;
const ITEM: DesiredItem = {
  type: "file",
  key: "/etc/app.conf",
  role: null,
  sensitive: false,
  properties: { path: "/etc/app.conf", exists: true, content: "x" },
};

let db: Db;
let hub: AgentHub;
let time: ReturnType<typeof manualClock>;

function addServer(name: string, key: string | null, active = true): ServerTarget {
  const now = new Date().toISOString();
  const { lastInsertRowid } = db
    .prepare(
      `INSERT INTO servers (name, name_key, server_type, active, agent_key_hash, created_at, modified_at)
       VALUES (?, ?, 'agent', ?, ?, ?, ?)`,
    )
    .run(name, name.toLowerCase(), active ? 1 : 0, key === null ? null : hashApiKey(key), now, now);
  return {
    id: Number(lastInsertRowid),
    name,
    type: "agent",
    rootPath: undefined,
    hostName: undefined,
    port: undefined,
    credentialsId: undefined,
    hostKeySha256: undefined,
  };
}

function run(lines: string[] = []): TransportRun {
  return {
    variables: new Map([["port", "8080"]]),
    signal: new AbortController().signal,
    log: (_level, message) => lines.push(message),
  };
}

async function agentOf(key: string) {
  const server = await hub.identify(key);
  if (server === undefined) throw new Error("unknown key");
  return server;
}

/** Takes a resolved agent, not a key: the poll is held when this returns, before the work a test queues next. */
const poll = (agent: AgentServer, waitMs = 0) =>
  hub.poll(agent, { waitMs, version: "1.2.3", signal: new AbortController().signal });

beforeEach(() => {
  db = openDatabase(":memory:");
  time = manualClock();
  hub = createAgentHub({ db, clock: time.clock, config: { agentLeaseMs: LEASE_MS, agentOfflineMs: OFFLINE_MS } });
});
afterEach(() => {
  hub.close();
  db.close();
});

describe("the agent hub", () => {
  it("hands a check to the held poll at once and settles it with the agent's result, in the items' order", async () => {
    const server = addServer("a1", "key-1");
    const agent = await agentOf("key-1");
    const held = poll(agent, 5000);
    const lines: string[] = [];
    const checked = hub.transport.check(server, [ITEM, { ...ITEM, key: "/etc/b", properties: {} }], run(lines));
    const work = (await held) as WorkItem[];
    expect(work).toHaveLength(1);
    expect(work[0]).toMatchObject({ kind: "check", simulate: false, variables: { port: "8080" }, leaseSeconds: 1 });
    const id = work[0]?.id ?? "";
    hub.log(agent, id, [{ level: "info", message: "hello from the agent" }]);
    hub.complete(agent, id, {
      results: [{ type: "file", key: "/etc/b", role: "spoofed", status: "current", differences: [] }],
      changes: [],
    });
    const results = await checked;
    expect(results.map((r) => [r.key, r.status, r.role])).toEqual([
      ["/etc/app.conf", "unknown", null],
      ["/etc/b", "current", null],
    ]);
    expect(lines).toEqual(["hello from the agent"]);
    expect(() => hub.complete(agent, id, { results: [], changes: [] })).toThrow(/No work/);
    const row = db.prepare("SELECT agent_version, agent_last_seen_at FROM servers WHERE id = ?").get(server.id);
    expect(row).toEqual({ agent_version: "1.2.3", agent_last_seen_at: time.at() });
  });

  it("fails work the agent took and then went silent on after the lease, and keeps work it renews", async () => {
    const server = addServer("a2", "key-2");
    const agent = await agentOf("key-2");
    await poll(agent);
    const checked = hub.transport.check(server, [ITEM], run());
    const [work] = (await poll(agent)) as WorkItem[];
    // Log posts (even empty) renew the lease.
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 2));
      hub.log(agent, work?.id ?? "", []);
    }
    const started = performance.now();
    await expect(checked).rejects.toThrow(
      /The agent of server a2 did not finish the check within 1 s of its last sign of life \(WHARF_AGENT_LEASE_SECONDS\)/,
    );
    expect(performance.now() - started).toBeGreaterThan(LEASE_MS - 50);
  });

  it("keeps queued work alive while the agent is busy and alive", async () => {
    const server = addServer("a3", "key-3");
    const agent = await agentOf("key-3");
    await poll(agent);
    const first = hub.transport.check(server, [ITEM], run());
    const [taken] = (await poll(agent)) as WorkItem[];
    const second = hub.transport.remediate(server, [ITEM], { ...run(), simulate: true });
    // The agent works on the first for longer than a lease, saying so; the second waits meanwhile.
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 2));
      hub.seen(agent, undefined);
      hub.log(agent, taken?.id ?? "", []);
    }
    hub.complete(agent, taken?.id ?? "", { results: [], changes: [] });
    await first;
    const [next] = (await poll(agent)) as WorkItem[];
    expect(next).toMatchObject({ kind: "remediate", simulate: true });
    hub.complete(agent, next?.id ?? "", {
      results: [],
      changes: [{ type: "file", key: "/etc/app.conf", description: "would write" }],
    });
    expect((await second).changes).toHaveLength(1);
  });

  it("fails at once for an agent never seen, or not seen for the offline time, naming since when", async () => {
    const server = addServer("a4", "key-4");
    await expect(hub.transport.check(server, [ITEM], run())).rejects.toThrow(
      "The agent of server a4 has never connected to Wharf.",
    );
    await poll(await agentOf("key-4"));
    const seenAt = time.at().slice(0, 19);
    time.advance(OFFLINE_MS + 1);
    await expect(hub.transport.check(server, [ITEM], run())).rejects.toThrow(
      `The agent of server a4 has not been seen since ${seenAt} UTC.`,
    );
  });

  it("gives an inactive server or one without a key no work", async () => {
    const inactive = addServer("a5", "key-5", false);
    await poll(await agentOf("key-5"));
    await expect(hub.transport.check(inactive, [ITEM], run())).rejects.toThrow("Server a5 is inactive");
    const revoked = addServer("a6", null);
    await expect(hub.transport.check(revoked, [ITEM], run())).rejects.toThrow(/Server a6 has no agent key/);
  });

  it("refuses a second poll with the same key while one is held, and ends a held poll whose key is revoked", async () => {
    addServer("a7", "key-7");
    // A short offline time: held polls are looked at every quarter of it (at most every 2 s).
    hub.close();
    hub = createAgentHub({ db, clock: time.clock, config: { agentLeaseMs: LEASE_MS, agentOfflineMs: 400 } });
    const agent = await agentOf("key-7");
    const held = poll(agent, 10_000);
    await expect(poll(agent)).rejects.toThrow(/Another agent is already connected/);
    db.prepare("UPDATE servers SET agent_key_hash = NULL WHERE name = 'a7'").run();
    expect(await hub.identify("key-7")).toBeUndefined();
    expect(await held).toBe("revoked");
  });
});
