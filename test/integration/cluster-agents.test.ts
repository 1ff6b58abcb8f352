import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_JSON_TYPE } from "../../src/agent/protocol.js";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { buildClusterTestApp, type ClusterTestApp, testCluster, type TestCluster } from "../helpers/cluster-app.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * Configuration agents across the nodes of one cluster (docs/cluster-mode.md; agent-hub-cluster.ts):
 * two whole nodes in this process on one PostgreSQL. The "agent" is this test, speaking the
 * protocol by inject, as the load balancer would send it: its poll held on one node, its log and
 * result posted to either. Work dispatched on either node reaches it; its result, posted to any
 * node, settles the check or remediation waiting on the other; a key revoked through one node
 * ends the poll held on the other; work it goes silent on ends at the lease.
 */

/** Short lease and offline time, as test/integration/config-agent.test.ts has them. */
const ENV = { WHARF_AGENT_LEASE_SECONDS: "4", WHARF_AGENT_OFFLINE_SECONDS: "5" };

const ITEMS = [
  { type: "file", path: "/etc/app.conf", content: "port=8080\n", mode: "0640" },
  { type: "file", path: "/etc/motd", content: "Managed by Wharf\n" },
];

interface Work {
  id: string;
  kind: string;
  simulate: boolean;
  items: { type: string; key: string }[];
  variables: Record<string, string>;
  leaseSeconds: number;
}

describe.skipIf(!postgresInstalled())("configuration agents on two nodes of one cluster", () => {
  let azurite: AzuriteServer;
  let cluster: TestCluster;
  let a: ClusterTestApp;
  let b: ClusterTestApp;
  const admin = (node: ClusterTestApp, method: "GET" | "POST", url: string) =>
    node.app.inject({ method, url, headers: { "x-apikey": cluster.adminKey } });
  const agent = (node: ClusterTestApp, key: string, options: InjectOptions) =>
    node.app.inject({
      ...options,
      headers: { authorization: `Bearer ${key}`, "user-agent": "wharf-agent/1.2.3", ...(options.headers as object) },
    });
  const poll = (node: ClusterTestApp, key: string, waitSeconds: number) =>
    agent(node, key, { method: "GET", url: `/api/agent/v1/poll?wait=${waitSeconds}` });
  const post = (node: ClusterTestApp, key: string, url: string, body: unknown) =>
    agent(node, key, {
      method: "POST",
      url,
      headers: { "content-type": AGENT_JSON_TYPE },
      payload: JSON.stringify(body),
    });
  const workOf = (response: LightMyRequestResponse): Work => {
    expect(response.statusCode, response.body).toBe(200);
    const [work] = (response.json() as { work: Work[] }).work;
    if (work === undefined) throw new Error("no work in the poll's answer");
    return work;
  };
  const until = async <T>(what: string, withinMs: number, probe: () => Promise<T | undefined>): Promise<T> => {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const found = await probe();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const statusOf = async (node: ClusterTestApp, server: string) => {
    const res = await admin(node, "GET", `/api/configuration/status?server=${server}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { status: string; errorText?: string; latestCollectionId?: number };
  };
  /** The status once no check of the server is executing and one newer than `after` is in. */
  const settledStatus = (node: ClusterTestApp, server: string, after = 0) =>
    until(`a new collection of ${server}`, 15_000, async () => {
      const status = await statusOf(node, server);
      return status.status !== "executing" && (status.latestCollectionId ?? 0) > after ? status : undefined;
    });
  const createAgentServer = async (name: string) => {
    const res = await a.app.inject({
      method: "POST",
      url: `/api/infrastructure/servers/create/${name}`,
      headers: { "x-apikey": cluster.adminKey },
      payload: { serverType: "agent", drift: "reportOnly", items: ITEMS },
    });
    expect(res.statusCode, res.body).toBe(201);
    return (res.json() as { agentKey: string }).agentKey;
  };
  /** The agent shows itself to `node` (one empty poll), and every node reads it as seen. */
  const appear = async (node: ClusterTestApp, key: string, server: string) => {
    expect((await poll(node, key, 0)).statusCode).toBe(204);
    await until(`${server} recorded as seen`, 5000, async () => {
      const { rows } = await a.db.pool.query("SELECT agent_last_seen_at FROM servers WHERE name = $1", [server]);
      const seen = rows[0]?.agent_last_seen_at as string | null | undefined;
      return seen != null && Date.now() - Date.parse(seen) < 2000 ? true : undefined;
    });
  };

  beforeAll(async () => {
    azurite = await startAzurite();
    cluster = await testCluster(await testPostgres().createDatabase(), azurite);
    a = await buildClusterTestApp(cluster, { env: ENV });
    b = await buildClusterTestApp(cluster, { env: ENV });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await azurite?.stop();
  });

  it("hands a check started on one node to the agent polling the other; its result, posted to either, is seen on both", async () => {
    const key = await createAgentServer("web1");
    await appear(a, key, "web1");
    const before = (await statusOf(a, "web1")).latestCollectionId ?? 0;
    const held = poll(a, key, 20);
    const asked = await admin(b, "GET", "/api/configuration/check?server=web1");
    expect(asked.statusCode, asked.body).toBe(200);
    const work = workOf(await held);
    expect(work).toMatchObject({ kind: "check", simulate: false, leaseSeconds: 4 });
    expect(work.items.map((item) => item.key)).toEqual(["/etc/app.conf", "/etc/motd"]);

    // Its log goes to node A, its result to node B: only the node that dispatched it waits for either.
    const logged = await post(a, key, `/api/agent/v1/work/${work.id}/log`, {
      lines: [{ level: "info", message: "collecting" }],
    });
    expect(logged.statusCode, logged.body).toBe(204);
    // An item the work does not have is refused by whichever node takes the result.
    const foreign = await post(b, key, `/api/agent/v1/work/${work.id}/result`, {
      results: [{ type: "file", key: "/etc/shadow", role: null, status: "current", differences: [] }],
      changes: [],
    });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.body).toMatch(/no file item '\/etc\/shadow'/);
    const done = await post(b, key, `/api/agent/v1/work/${work.id}/result`, {
      results: [
        {
          type: "file",
          key: "/etc/app.conf",
          role: null,
          status: "drifted",
          differences: [{ property: "exists", desired: true, actual: false }],
        },
      ],
      changes: [],
    });
    expect(done.statusCode, done.body).toBe(204);
    for (const node of [a, b]) {
      expect((await settledStatus(node, "web1", before)).status).toBe("drifted");
      const items = (await admin(node, "GET", "/api/configuration/server/web1")).json() as {
        key: string;
        status: string;
      }[];
      expect(items.find((item) => item.key === "/etc/app.conf")?.status).toBe("drifted");
      expect(items.find((item) => item.key === "/etc/motd")?.status).toBe("unknown");
    }
    // Reported once: the work is gone on every node.
    for (const node of [a, b]) {
      expect(
        (await post(node, key, `/api/agent/v1/work/${work.id}/result`, { results: [], changes: [] })).statusCode,
      ).toBe(404);
    }
  });

  it("hands a remediation to the agent polling either node: its log lines reach the job's log, its result ends the job", async () => {
    const key = await createAgentServer("web2");
    await appear(b, key, "web2");
    // A check first (work queued before the poll: the poll on B takes it at once), to find drift.
    const asked = await admin(a, "GET", "/api/configuration/check?server=web2");
    expect(asked.statusCode, asked.body).toBe(200);
    const check = workOf(
      await until("the check queued for web2", 5000, async () => {
        const polled = await poll(b, key, 1);
        return polled.statusCode === 200 ? polled : undefined;
      }),
    );
    const drifted = {
      type: "file",
      key: "/etc/motd",
      role: null,
      status: "drifted",
      differences: [{ property: "content", desired: "x", actual: "y" }],
    };
    const current = { type: "file", key: "/etc/app.conf", role: null, status: "current", differences: [] };
    expect(
      (await post(a, key, `/api/agent/v1/work/${check.id}/result`, { results: [current, drifted], changes: [] }))
        .statusCode,
    ).toBe(204);
    expect((await settledStatus(b, "web2")).status).toBe("drifted");

    // The remediation runs on whichever node's job runner claims it; the agent holds its poll on B.
    const held = poll(b, key, 20);
    const remediate = await admin(a, "GET", "/api/configuration/remediate/server/web2");
    expect(remediate.statusCode, remediate.body).toBe(200);
    const work = workOf(await held);
    expect(work.kind).toBe("remediate");
    expect(work.items.map((item) => item.key)).toContain("/etc/motd");
    for (const [node, message] of [
      [b, "wrote /etc/motd (from node B)"],
      [a, "verified /etc/motd (from node A)"],
    ] as const) {
      const logged = await post(node, key, `/api/agent/v1/work/${work.id}/log`, {
        lines: [{ level: "info", message }],
      });
      expect(logged.statusCode, logged.body).toBe(204);
    }
    const done = await post(a, key, `/api/agent/v1/work/${work.id}/result`, {
      results: [current, { ...drifted, status: "current", differences: [] }],
      changes: [{ type: "file", key: "/etc/motd", description: "wrote the content" }],
    });
    expect(done.statusCode, done.body).toBe(204);
    // The job checks the server again: the agent, polling node A now, answers that too, to node B.
    const closing = workOf(
      await until("the closing check", 5000, async () => {
        const polled = await poll(a, key, 1);
        return polled.statusCode === 200 ? polled : undefined;
      }),
    );
    expect(closing.kind).toBe("check");
    const currentMotd = { ...drifted, status: "current", differences: [] };
    expect(
      (await post(b, key, `/api/agent/v1/work/${closing.id}/result`, { results: [current, currentMotd], changes: [] }))
        .statusCode,
    ).toBe(204);
    for (const node of [a, b]) {
      const word = await until("the remediation's end", 15_000, async () => {
        const res = await admin(node, "GET", `/api/configuration/remediate/status?token=${remediate.body}`);
        return res.body === "pending" || res.body === "running" ? undefined : res.body;
      });
      expect(word).toBe("completed");
    }
    const { rows } = await b.db.pool.query<{ message: string }>(
      "SELECT message FROM job_log WHERE message LIKE '%(from node %' ORDER BY id",
    );
    expect(rows.map((row) => row.message)).toEqual(
      expect.arrayContaining([
        expect.stringContaining("wrote /etc/motd (from node B)"),
        expect.stringContaining("verified /etc/motd (from node A)"),
      ]),
    );
    expect(rows.findIndex((row) => row.message.includes("node B"))).toBeLessThan(
      rows.findIndex((row) => row.message.includes("node A")),
    );
    for (const node of [a, b]) expect((await statusOf(node, "web2")).status).toBe("current");
  });

  it("ends the poll held on one node when the key is revoked through the other", async () => {
    const key = await createAgentServer("web3");
    await appear(a, key, "web3");
    const started = Date.now();
    const held = poll(a, key, 20);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const revoked = await admin(b, "POST", "/api/infrastructure/servers/revoke-agent-key/web3");
    expect(revoked.statusCode, revoked.body).toBe(200);
    const ended = await held;
    expect(ended.statusCode).toBe(403);
    expect(ended.headers["x-wharf-error"]).toBe("AGENT_KEY_INVALID");
    expect(ended.body).toMatch(/revoked or never issued/);
    // Told within the sweep (a few seconds), not at the end of its 20 s wait.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await poll(b, key, 0)).statusCode).toBe(403);
  });

  it("refuses a second poll with the server's key on the other node while one is held, as on one machine; accepts it once the first ended", async () => {
    const key = await createAgentServer("web5");
    await appear(a, key, "web5");
    const held = poll(a, key, 20);
    await until("the poll held on node A", 5000, async () => {
      const { rows } = await b.db.pool.query(
        "SELECT 1 FROM agent_polls JOIN servers ON servers.id = agent_polls.server_id WHERE servers.name = $1",
        ["web5"],
      );
      return rows.length === 1 ? true : undefined;
    });
    // A second agent started with the same key, its poll sent to node B by the load balancer.
    const refused = await poll(b, key, 2);
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.headers["x-wharf-error"]).toBe("AGENT_ALREADY_CONNECTED");
    expect(refused.headers["content-type"]).toMatch(/^text\/plain/);
    expect(refused.body).toBe(
      "Another agent is already connected with the key of server web5: run one agent per server (each server has its own key).",
    );
    // The same answer as the node holding the poll gives, as one machine gives it.
    const onSameNode = await poll(a, key, 0);
    expect(onSameNode.statusCode).toBe(409);
    expect(onSameNode.headers["x-wharf-error"]).toBe("AGENT_ALREADY_CONNECTED");
    expect(onSameNode.body).toBe(refused.body);

    // The held poll ends with work; the agent's next poll, on node B, is taken at once.
    const asked = await admin(b, "GET", "/api/configuration/check?server=web5");
    expect(asked.statusCode, asked.body).toBe(200);
    const work = workOf(await held);
    const next = await poll(b, key, 0);
    expect(next.statusCode, next.body).toBe(204);
    expect(next.headers["x-wharf-agent-server"]).toBe("web5");
    const current = ITEMS.map((item) => ({
      type: "file",
      key: item.path,
      role: null,
      status: "current",
      differences: [],
    }));
    const done = await post(b, key, `/api/agent/v1/work/${work.id}/result`, { results: current, changes: [] });
    expect(done.statusCode, done.body).toBe(204);
    expect((await settledStatus(a, "web5")).status).toBe("current");
  });

  it("fails work its agent took on one node and then went silent on, after the lease, on every node", async () => {
    const key = await createAgentServer("web4");
    await appear(b, key, "web4");
    const held = poll(b, key, 20);
    const asked = await admin(a, "GET", "/api/configuration/check?server=web4");
    expect(asked.statusCode, asked.body).toBe(200);
    const taken = Date.now();
    const work = workOf(await held);
    // Silent from now on: no log, no result, no poll.
    for (const node of [a, b]) {
      const status = await settledStatus(node, "web4");
      expect(status.status).toBe("error");
      expect(status.errorText).toMatch(
        /The agent of server web4 did not finish the check within 4 s of its last sign of life \(WHARF_AGENT_LEASE_SECONDS\)/,
      );
    }
    const elapsed = Date.now() - taken;
    expect(elapsed).toBeGreaterThanOrEqual(3500);
    expect(elapsed).toBeLessThan(12_000);
    // Its lease lapsed: a late result is refused on every node.
    for (const node of [a, b]) {
      expect(
        (await post(node, key, `/api/agent/v1/work/${work.id}/result`, { results: [], changes: [] })).statusCode,
      ).toBe(404);
    }
  });
});
