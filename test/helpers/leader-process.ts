import { registerNode } from "../../src/storage/postgres/cluster-nodes.js";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import { createLeadership } from "../../src/storage/postgres/leadership.js";

/**
 * A Wharf node in miniature, as a process of its own, for the tests of cluster mode that kill a
 * node (test/contract/postgres-leadership.test.ts, postgres-cluster-nodes.test.ts). Run as
 * `node --import tsx test/helpers/leader-process.ts '<json>'` with ClusterNodeProcessOptions; it
 * prints `registered` once its cluster_nodes row is written and `leading` / `lost` as its
 * leadership comes and goes, one per line, and runs until it is killed.
 */
export interface ClusterNodeProcessOptions {
  readonly url: string;
  readonly nodeId: string;
  /** Takes this leadership. */
  readonly lease?: { readonly name: string; readonly key: number; readonly retryMs: number; readonly checkMs: number };
  /** Registers the node with this heartbeat. */
  readonly heartbeatMs?: number;
}

const options = JSON.parse(process.argv[2] ?? "{}") as ClusterNodeProcessOptions;
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const complain = (error: Error) => process.stderr.write(`leader-process ${options.nodeId}: ${error.message}\n`);

// Leases and heartbeats never keep a process alive by themselves; this one lives until killed.
setInterval(() => {}, 60_000);

if (options.heartbeatMs !== undefined) {
  const pool = openPostgres(options.url, { applicationName: `wharf ${options.nodeId}`, onIdleError: complain });
  await registerNode(pool, {
    nodeId: options.nodeId,
    version: "test",
    heartbeatMs: options.heartbeatMs,
    onError: complain,
  });
  say("registered");
}

if (options.lease !== undefined) {
  createLeadership({
    url: options.url,
    name: options.lease.name,
    key: options.lease.key,
    nodeId: options.nodeId,
    retryMs: options.lease.retryMs,
    checkMs: options.lease.checkMs,
    onGain: () => say("leading"),
    onLose: () => say("lost"),
    onError: complain,
  }).start();
}
