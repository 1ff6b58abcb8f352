import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { compileCli, startAgent } from "../test/helpers/agent-process.js";
import { startBenchServer } from "./server.js";

/**
 * The agent's figures (issue 13 section 5): a check of one `agent` server with 1,000 file items
 * (target under 2 s), beside the same check of a `local` server in the same run (the baseline:
 * same engine, no protocol), and an idle agent's memory and CPU (targets under 60 MB RSS and 1%
 * of a core). Wharf and the agent are compiled builds, each in its own process. Not a test;
 * prints one JSON object (progress on standard error).
 *
 * Usage: `node --import tsx bench/agent.ts [items=1000] [checks=5] [idleSeconds=20]`
 */
const itemCount = Number(process.argv[2] ?? 1000);
const checks = Number(process.argv[3] ?? 5);
const idleSeconds = Number(process.argv[4] ?? 20);
const log = (message: string) => process.stderr.write(`[bench agent] ${message}\n`);

const scratch = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-agent-bench-"));
const deployRoot = path.join(scratch, "deploy");
await fs.mkdir(deployRoot);
const compiled = await compileCli();
const adminKey = randomBytes(24).toString("hex");
const server = await startBenchServer({
  dataDir: path.join(scratch, "data"),
  adminKey,
  logLevel: "warn",
  entry: compiled.cli,
  env: { WHARF_DEPLOY_ROOT: deployRoot },
});
const headers = { "x-apikey": adminKey, "content-type": "application/json" };

async function call(method: "GET" | "POST", url: string, body?: unknown): Promise<string> {
  const response = await fetch(`${server.url}${url}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text.slice(0, 300)}`);
  return text;
}

interface Status {
  status: string;
  latestCollectionId?: number;
  errorText?: string;
}
const statusOf = async (name: string) =>
  JSON.parse(await call("GET", `/api/configuration/status?server=${name}`)) as Status;

/** Milliseconds from asking for a check to its collection being stored. */
async function timedCheck(name: string): Promise<{ ms: number; status: Status }> {
  const before = (await statusOf(name)).latestCollectionId ?? 0;
  const started = performance.now();
  await call("GET", `/api/configuration/check?server=${name}`);
  for (;;) {
    const status = await statusOf(name);
    if (status.status !== "executing" && (status.latestCollectionId ?? 0) > before) {
      return { ms: performance.now() - started, status };
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function remediate(name: string): Promise<void> {
  const token = await call("GET", `/api/configuration/remediate/server/${name}`);
  for (;;) {
    const word = await call("GET", `/api/configuration/remediate/status?token=${token}`);
    if (word === "completed") return;
    if (word !== "pending" && word !== "running") throw new Error(`remediation of ${name}: ${word}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const items = Array.from({ length: itemCount }, (_, i) => ({
  type: "file",
  path: `/srv/app/conf/file-${i}.conf`,
  content: `# item ${i}\nvalue=${i}\n`.repeat(4),
  mode: "0644",
}));
const withDirectory = [{ type: "directory", path: "/srv/app/conf", mode: "0755" }, ...items];

const localRoot = path.join(deployRoot, "local");
await fs.mkdir(localRoot);
await call("POST", "/api/infrastructure/servers/create/bench-local", {
  serverType: "local",
  rootPath: localRoot,
  items: withDirectory,
});
const created = JSON.parse(
  await call("POST", "/api/infrastructure/servers/create/bench-agent", { serverType: "agent", items: withDirectory }),
) as { agentKey: string };
const agent = startAgent(compiled.cli, {
  server: server.url,
  key: created.agentKey,
  root: path.join(scratch, "agent"),
});

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)] ?? Number.NaN);
};

function procFigures(pid: number): { cpuTicks: number; rssBytes: number; peakRssBytes: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? Number.NaN) * 1024;
  // utime and stime: fields 14 and 15 of /proc/<pid>/stat, the 12th and 13th after the command.
  return { cpuTicks: Number(fields[11]) + Number(fields[12]), rssBytes: kib("VmRSS"), peakRssBytes: kib("VmHWM") };
}

try {
  await agent.waitForOutput(/connected to/, 20_000);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const fresh = procFigures(agent.pid);
  log(`agent connected (pid ${agent.pid}); first remediation of both servers (${itemCount} files each)`);
  await Promise.all([remediate("bench-local"), remediate("bench-agent")]);

  const local: number[] = [];
  const remote: number[] = [];
  for (let run = 0; run < checks; run++) {
    const l = await timedCheck("bench-local");
    const a = await timedCheck("bench-agent");
    if (l.status.status !== "current" || a.status.status !== "current") {
      throw new Error(`expected current, got local ${JSON.stringify(l.status)}, agent ${JSON.stringify(a.status)}`);
    }
    local.push(l.ms);
    remote.push(a.ms);
    log(`check ${run + 1}: local ${Math.round(l.ms)} ms, agent ${Math.round(a.ms)} ms`);
  }

  log(`idle agent: measuring for ${idleSeconds} s`);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const before = procFigures(agent.pid);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  const after = procFigures(agent.pid);
  const seconds = (performance.now() - started) / 1000;
  const ticksPerSecond = 100;
  const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

  process.stdout.write(
    `${JSON.stringify(
      {
        items: itemCount,
        checks,
        checkMsMedian: { local: median(local), agent: median(remote) },
        checkMs: { local: local.map(Math.round), agent: remote.map(Math.round) },
        idleAgent: {
          seconds: Math.round(seconds),
          cpuPercentOfCore: Math.round(((after.cpuTicks - before.cpuTicks) / ticksPerSecond / seconds) * 10000) / 100,
          rssMB: mb(after.rssBytes),
          beforeAnyWorkRssMB: mb(fresh.rssBytes),
          peakRssMB: mb(after.peakRssBytes),
        },
        server: { peakRssMB: mb(server.peakRssBytes() ?? Number.NaN) },
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await agent.stop();
  await server.stop();
  await compiled.remove();
  await fs.rm(scratch, { recursive: true, force: true });
}
