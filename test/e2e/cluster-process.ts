import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestCluster } from "../helpers/cluster-app.js";
import { type RunningServer, startServer } from "./process.js";

/**
 * Real `wharf serve` processes as the nodes of one test cluster (test/helpers/cluster-app.ts
 * testCluster): one PostgreSQL, one object store, the same secret key and admin key, each node with
 * a data directory of its own, reached over HTTP as a load balancer would reach them.
 */
export interface ClusterProcesses {
  /** Starts a node and waits until it listens; `env` adds settings (a short job lease, ...). */
  start(env?: Record<string, string>): Promise<RunningServer>;
  /** A request to `node` with the cluster's admin key. */
  call(node: RunningServer, url: string, init?: RequestInit): Promise<Response>;
  /** Stops every node started (those killed already stay dead) and removes their data directories. */
  close(): Promise<void>;
}

export function clusterProcesses(cluster: TestCluster): ClusterProcesses {
  const started: RunningServer[] = [];
  const dataDirs: string[] = [];
  return {
    async start(env = {}) {
      const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-cluster-e2e-"));
      dataDirs.push(dataDir);
      const node = await startServer(
        {
          WHARF_DATA_DIR: dataDir,
          WHARF_DATABASE_URL: cluster.databaseUrl,
          WHARF_SECRET_KEY: cluster.secretKey,
          WHARF_ADMIN_API_KEY: cluster.adminKey,
          ...cluster.storeEnv,
          ...env,
        },
        // Nodes started together migrate a new database one after the other, on a machine shared by other runs.
        60_000,
      );
      started.push(node);
      return node;
    },
    call(node, url, init = {}) {
      const headers = { "x-apikey": cluster.adminKey, ...(init.headers as Record<string, string> | undefined) };
      return fetch(`${node.url}${url}`, { ...init, headers });
    },
    async close() {
      await Promise.all(started.map((node) => node.stop()));
      await Promise.all(dataDirs.map((dir) => fs.rm(dir, { recursive: true, force: true })));
    },
  };
}

/** SIGKILL: no goodbye to the database, as a crash or an OOM kill. */
export async function kill(node: RunningServer): Promise<void> {
  process.kill(node.pid, "SIGKILL");
  await node.exited;
}

/** The node's id as its /health names it: what `cluster_nodes` and `job_leases` record. */
export async function nodeIdOf(node: RunningServer): Promise<string> {
  return ((await (await fetch(`${node.url}/health`)).json()) as { node: { id: string } }).node.id;
}
