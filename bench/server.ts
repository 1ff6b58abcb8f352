import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The V8 setting every way of starting the server passes (package.json, Dockerfile, src/cli/main.ts). */
const SERVER_NODE_FLAG = "--max-semi-space-size=8";

/** The server under benchmark: `wharf serve` in its own process, so that its memory and CPU are its own. */
export interface BenchServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly pid: number;
  /** Peak resident set size so far (Linux VmHWM), or undefined where /proc is not available. */
  peakRssBytes(): number | undefined;
  stop(): Promise<void>;
}

/** A port that was free a moment ago (the listening log line is not printed below level info). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no TCP port");
  return address.port;
}

/**
 * Compiles src/ into `dir` as `npm run build` would (tsconfig.build.json), beside a copy of
 * package.json and migrations/ and a link to node_modules, so that it runs like an installed
 * build without touching the working tree's dist/. Returns the CLI entry point.
 */
function buildInto(dir: string): string {
  execFileSync(
    process.execPath,
    [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", dir],
    {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  fs.copyFileSync(path.join(ROOT, "package.json"), path.join(dir, "package.json"));
  fs.cpSync(path.join(ROOT, "migrations"), path.join(dir, "migrations"), { recursive: true });
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
  return path.join(dir, "src/cli/main.js");
}

export async function startBenchServer(options: {
  dataDir: string;
  adminKey: string;
  logLevel: string;
  /** Run a compiled build made in this directory instead of the sources through tsx (whose loader costs ~40 MB). */
  buildDir?: string;
  /** Run this compiled CLI entry (`dist/src/cli/main.js` of another checkout, to compare with) instead. */
  entry?: string;
  /** More WHARF_* settings for the server. */
  env?: Readonly<Record<string, string>>;
  timeoutMs?: number;
}): Promise<BenchServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("WHARF_")));
  // Started as `npm start`, the Docker image and the `wharf` command start it (README "Memory").
  const args =
    options.entry !== undefined
      ? [SERVER_NODE_FLAG, options.entry, "serve"]
      : options.buildDir === undefined
        ? [SERVER_NODE_FLAG, "--import", "tsx", path.join(ROOT, "src/cli/main.ts"), "serve"]
        : [SERVER_NODE_FLAG, buildInto(options.buildDir), "serve"];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...env,
      WHARF_HOST: "127.0.0.1",
      WHARF_PORT: String(port),
      WHARF_DATA_DIR: options.dataDir,
      WHARF_ADMIN_API_KEY: options.adminKey,
      ...options.env,
      WHARF_LOG_LEVEL: options.logLevel,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Drained continuously (a full pipe would block the server's logging); only the tail is kept.
  let tail = "";
  const keepTail = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-10_000);
  };
  child.stdout?.on("data", keepTail);
  child.stderr?.on("data", keepTail);
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once("close", (code) => {
      exitCode = code;
      resolve();
    }),
  );

  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    if (exitCode !== undefined) throw new Error(`the server exited with code ${exitCode} during start-up\n${tail}`);
    try {
      const res = await fetch(`${url}/health`);
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the server did not answer /health in time\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  return {
    url,
    pid: child.pid ?? -1,
    peakRssBytes() {
      try {
        const status = fs.readFileSync(`/proc/${child.pid}/status`, "utf8");
        const kib = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status)?.[1];
        return kib === undefined ? undefined : Number(kib) * 1024;
      } catch {
        return undefined;
      }
    },
    async stop() {
      if (exitCode !== undefined) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
