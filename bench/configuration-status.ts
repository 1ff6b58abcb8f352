import path from "node:path";
import Database from "better-sqlite3";
import os from "node:os";
import { cpuSeconds, loadFigures, percentile, round, runLoad } from "./load.js";
import type { Scenario, ScenarioContext } from "./scenarios.js";
import { runWrkOnce, wrkAvailable } from "./wrk.js";
import { createApiKey } from "./api-keys.js";

/**
 * Configuration status (issue 13 section 5): `GET /api/configuration/status` of every server,
 * role and environment with 1,000 servers of 20 items each, every server with stored collections
 * (target p99 under 20 ms), and the status of one server, each beside a baseline in the same run
 * (`/health`: the same server and client, no work). The key is a System key with the
 * `configuration` scope only, sent as X-ApiKey like InedoCore does. Each URL is measured one
 * request at a time on the idle server first (what a request costs), then under load (wrk when
 * installed, as for the CI badges; else autocannon, which on a 2-core machine competes with the
 * server for CPU), with the server's CPU time per request.
 *
 * Data goes straight into the server's database in one transaction (what checks would have
 * written: 3 collections per server, the last completed with its 20 items, one server in seven
 * drifted, a few remediation jobs pending far ahead), so that nothing runs while it measures.
 *
 * `npm run bench -- configuration-status-1000-servers`
 */
const SERVERS = 1_000;
const ITEMS = 20;
const ROLES = 10;
const ENVIRONMENTS = 3;
const COLLECTIONS_PER_SERVER = 3;
const TARGET_P99_MS = 20;
const ONE_SERVER = "bench-server-0500";
/** Sequential requests measured before each load. */
const ONE_CLIENT_SAMPLES = 200;

interface Seeded {
  readonly key: string;
  readonly seedMs: number;
  readonly collectedItems: number;
}
let seeded: Seeded | undefined;

const configurationKey = (ctx: ScenarioContext) =>
  createApiKey(ctx, { type: "System", systemApis: ["configuration"], displayName: "bench configuration" });

export function seedConfigurationStatus(ctx: Pick<ScenarioContext, "dataDir">): Omit<Seeded, "key"> {
  const started = Date.now();
  const db = new Database(path.join(ctx.dataDir, "wharf.sqlite"));
  db.pragma("busy_timeout = 10000");
  const now = new Date().toISOString();
  let collectedItems = 0;
  db.transaction(() => {
    const role = db.prepare(
      "INSERT INTO roles (name, name_key, variables, created_at, modified_at) VALUES (?, ?, '{}', ?, ?) RETURNING id",
    );
    const roleIds = Array.from({ length: ROLES }, (_, i) => {
      const name = `bench-role-${i}`;
      return (role.get(name, name, now, now) as { id: number }).id;
    });
    const environment = db.prepare("INSERT INTO environments (name, name_key) VALUES (?, ?) RETURNING id");
    const environmentIds = Array.from({ length: ENVIRONMENTS }, (_, i) => {
      const name = `bench-env-${i}`;
      return (environment.get(name, name) as { id: number }).id;
    });
    const server = db.prepare(
      `INSERT INTO servers (name, name_key, server_type, drift_mode, root_path, variables, created_at, modified_at)
       VALUES (?, ?, 'local', 'reportOnly', ?, '{}', ?, ?) RETURNING id`,
    );
    const serverRole = db.prepare("INSERT INTO server_roles (server_id, role_id, position) VALUES (?, ?, ?)");
    const serverEnvironment = db.prepare("INSERT INTO server_environments (server_id, environment_id) VALUES (?, ?)");
    const collection = db.prepare(
      `INSERT INTO config_collections (server_id, status, started_at, ended_at, items, drifted, unknown)
       VALUES (?, 'completed', ?, ?, ?, ?, 0) RETURNING id`,
    );
    const item = db.prepare(
      `INSERT INTO config_collected_items (collection_id, position, type, key, role_id, role_name, status, differences)
       VALUES (?, ?, 'file', ?, ?, ?, ?, ?)`,
    );
    const job = db.prepare(
      "INSERT INTO jobs (kind, payload, status, created_at, not_before) VALUES ('configuration.remediate', '{}', 'pending', ?, '2100-01-01T00:00:00.000Z') RETURNING id",
    );
    const remediation = db.prepare(
      "INSERT INTO config_remediations (job_id, entity_type, entity_name, simulate, created_at) VALUES (?, 'server', ?, 0, ?)",
    );
    const target = db.prepare("INSERT INTO config_remediation_targets (job_id, server_id) VALUES (?, ?)");
    for (let i = 0; i < SERVERS; i++) {
      const name = `bench-server-${String(i).padStart(4, "0")}`;
      const id = (server.get(name, name, `/srv/bench/${name}`, now, now) as { id: number }).id;
      const roles = [roleIds[i % ROLES] as number, roleIds[(i + 1) % ROLES] as number];
      roles.forEach((roleId, position) => serverRole.run(id, roleId, position));
      serverEnvironment.run(id, environmentIds[i % ENVIRONMENTS] as number);
      const drifted = i % 7 === 0 ? 2 : 0;
      for (let c = 0; c < COLLECTIONS_PER_SERVER; c++) {
        const last = c === COLLECTIONS_PER_SERVER - 1;
        const collectionId = (collection.get(id, now, now, ITEMS, last ? drifted : 0) as { id: number }).id;
        // Older collections keep their items too, as a real history does (the status must not read them).
        for (let position = 0; position < ITEMS; position++) {
          const roleIndex = position < 8 ? 0 : position < 16 ? 1 : undefined;
          const roleId = roleIndex === undefined ? null : (roles[roleIndex] as number);
          const isDrifted = last && position < drifted;
          item.run(
            collectionId,
            position,
            `/srv/app/file-${position}.conf`,
            roleId,
            roleId === null ? null : `bench-role-${roleIds.indexOf(roleId)}`,
            isDrifted ? "drifted" : "current",
            isDrifted ? '[{"property":"sha256","desired":"aa","actual":"bb"}]' : "[]",
          );
          collectedItems += 1;
        }
      }
      if (i % 100 === 0) {
        const jobId = (job.get(now) as { id: number }).id;
        remediation.run(jobId, name, now);
        target.run(jobId, id);
      }
    }
  })();
  db.close();
  return { seedMs: Date.now() - started, collectedItems };
}

/**
 * `status` of all, each request right after a write by another connection (as while checks keep
 * storing collections): nothing kept can be used, every answer is read and built anew.
 */
async function allAfterWrites(ctx: ScenarioContext, headers: Record<string, string>) {
  const db = new Database(path.join(ctx.dataDir, "wharf.sqlite"));
  db.pragma("busy_timeout = 10000");
  const write = db.prepare(
    "INSERT INTO global_variables (name, name_key, value) VALUES ('BenchTick', 'benchtick', ?) " +
      "ON CONFLICT (name_key) DO UPDATE SET value = excluded.value",
  );
  const samples: number[] = [];
  try {
    for (let i = 0; i < ONE_CLIENT_SAMPLES; i++) {
      write.run(String(i));
      const started = performance.now();
      await (await fetch(`${ctx.url}/api/configuration/status`, { headers })).arrayBuffer();
      samples.push(performance.now() - started);
    }
  } finally {
    db.close();
  }
  return { requests: samples.length, p50Ms: round(percentile(samples, 50)), p99Ms: round(percentile(samples, 99)) };
}

const statusAll: Scenario = {
  name: "configuration-status-1000-servers",
  async setup(ctx) {
    const key = await configurationKey(ctx);
    seeded = { key, ...seedConfigurationStatus(ctx) };
    ctx.log(`seeded ${SERVERS} servers, ${seeded.collectedItems} collected items in ${seeded.seedMs} ms`);
  },
  async run(ctx) {
    if (seeded === undefined) throw new Error("setup did not run");
    const headers = { "X-ApiKey": seeded.key };
    const all = await fetch(`${ctx.url}/api/configuration/status`, { headers });
    const objects = (await all.json()) as { type: string; status: string }[];
    const servers = objects.filter((o) => o.type === "server");
    if (all.status !== 200 || servers.length !== SERVERS) {
      throw new Error(`status answered ${all.status} with ${servers.length} servers`);
    }
    const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
    const client = wrkAvailable() ? "wrk" : "autocannon";
    const measure = async (name: string, url: string) => {
      // One request at a time on the idle server: what one request costs, whatever the client.
      const samples: number[] = [];
      for (let i = 0; i < ONE_CLIENT_SAMPLES; i++) {
        const started = performance.now();
        await (await fetch(`${ctx.url}${url}`, { headers })).arrayBuffer();
        samples.push(performance.now() - started);
      }
      ctx.log(`${statusAll.name} ${name}: ${ctx.duration} s with ${connections} connections (${client})`);
      const load = { url: `${ctx.url}${url}`, headers, connections };
      if (ctx.warmup > 0) {
        if (client === "wrk") await runWrkOnce(load, ctx.warmup);
        else await runLoad({ ...load, duration: ctx.warmup });
      }
      const before = cpuSeconds(ctx.serverPid);
      const result =
        client === "wrk" ? await runWrkOnce(load, ctx.duration) : await runLoad({ ...load, duration: ctx.duration });
      const after = cpuSeconds(ctx.serverPid);
      return {
        url,
        oneClientP50Ms: round(percentile(samples, 50)),
        oneClientP99Ms: round(percentile(samples, 99)),
        ...loadFigures(result, before, after),
      };
    };
    const baseline = await measure("baseline", "/health");
    const everything = await measure("all", "/api/configuration/status");
    const one = await measure("one server", `/api/configuration/status?server=${ONE_SERVER}`);
    const afterWrite = await allAfterWrites(ctx, headers);
    return {
      servers: SERVERS,
      itemsPerServer: ITEMS,
      collectionsPerServer: COLLECTIONS_PER_SERVER,
      collectedItems: seeded.collectedItems,
      objectsInAll: objects.length,
      driftedServers: servers.filter((s) => s.status === "drifted").length,
      responseBytesAll: JSON.stringify(objects).length,
      seedMs: seeded.seedMs,
      connections,
      client,
      loadAverage: os.loadavg().map((value) => round(value)),
      targetP99Ms: TARGET_P99_MS,
      withinTarget: everything.latencyP99Ms < TARGET_P99_MS,
      oneClientWithinTarget: everything.oneClientP99Ms < TARGET_P99_MS,
      baseline,
      all: everything,
      oneServer: one,
      allAfterWrite: afterWrite,
      allOverBaselineP99Ms: round(everything.latencyP99Ms - baseline.latencyP99Ms),
    };
  },
};

export const CONFIGURATION_SCENARIOS: readonly Scenario[] = [statusAll];
