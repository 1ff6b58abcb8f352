import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ClusterNodeProcessOptions } from "./leader-process.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SCRIPT = path.join(ROOT, "test/helpers/leader-process.ts");

/** A real second Wharf "node" (test/helpers/leader-process.ts), to be killed as a node dies. */
export interface ClusterNodeProcess {
  readonly pid: number;
  /** Resolves once the process has printed this line (`registered`, `leading`), however long ago. */
  waitForLine(line: string, timeoutMs: number): Promise<void>;
  /** SIGKILL, as a crash or an OOM kill: no goodbye to the database; resolves once it exited. */
  kill(): Promise<void>;
}

export async function startClusterNodeProcess(options: ClusterNodeProcessOptions): Promise<ClusterNodeProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", SCRIPT, JSON.stringify(options)], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit");
  await once(child, "spawn");
  let output = "";
  const listeners = new Set<() => void>();
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  });
  return {
    pid: child.pid as number,
    waitForLine(line, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!output.split("\n").includes(line)) return;
          finish();
          resolve();
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`the node process did not print "${line}" within ${timeoutMs} ms (it printed: ${output})`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}
