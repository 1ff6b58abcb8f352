import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ScenarioContext } from "./scenarios.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The baseline file server (upack-baseline-server.ts), one per bench run, started on first use. */
export interface Baseline {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly pid: number;
  /** Where the files it serves live: a scenario writes its package here, then uploads that same file. */
  readonly dir: string;
}

const running = new WeakMap<ScenarioContext, Promise<Baseline>>();

export function baselineOf(ctx: ScenarioContext): Promise<Baseline> {
  let baseline = running.get(ctx);
  if (baseline === undefined) {
    baseline = start(ctx);
    running.set(ctx, baseline);
  }
  return baseline;
}

async function start(ctx: ScenarioContext): Promise<Baseline> {
  const dir = path.join(ctx.workDir, "files");
  fs.mkdirSync(dir, { recursive: true });
  const child = spawn(process.execPath, ["--import", "tsx", path.join(HERE, "upack-baseline-server.ts"), dir], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  ctx.defer(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const line = out.split("\n")[0];
      if (out.includes("\n") && line !== undefined) resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once("error", reject);
    child.once("close", (code) => reject(new Error(`the baseline server exited with code ${code}`)));
  });
  ctx.log(`baseline server ${child.pid} on port ${port}`);
  return { url: `http://127.0.0.1:${port}`, pid: child.pid ?? -1, dir };
}
