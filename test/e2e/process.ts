import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";

/**
 * Helpers for end-to-end tests: the real `wharf` entry in a child process, compiled once per run
 * by the e2e project's global setup (build.ts).
 */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The parent's environment without any WHARF_* variable (a developer's shell must not leak in), plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("WHARF_")));
  return { ...clean, ...env };
}

/** `wrapper`: a command that runs the process (e.g. `setpriv ...` to run it with fewer privileges). */
function spawnWharf(args: string[], env: Record<string, string>, wrapper: readonly string[] = []): ChildProcess {
  const [command = process.execPath, ...commandArgs] = [...wrapper, process.execPath, inject("wharfCli"), ...args];
  return spawn(command, commandArgs, {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface RunResult extends Exit {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `wharf <args>` to completion. */
export function runWharf(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 20_000,
  wrapper: readonly string[] = [],
): Promise<RunResult> {
  const child = spawnWharf(args, env, wrapper);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`wharf ${args.join(" ")} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves once a stdout line matches (already printed lines included). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  readonly exited: Promise<Exit>;
  /** SIGTERM, then the exit; SIGKILL if it does not exit in time (and the exit is then reported as such). */
  stop(timeoutMs?: number): Promise<Exit>;
}

/**
 * Starts `wharf serve` on 127.0.0.1 and an OS-chosen port (WHARF_PORT=0) and waits for the
 * "Wharf listening on" log line, which carries the real address.
 */
export async function startServer(env: Record<string, string>, timeoutMs = 20_000): Promise<RunningServer> {
  const child = spawnWharf(["serve"], { WHARF_PORT: "0", WHARF_HOST: "127.0.0.1", ...env });
  let stdout = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
    notify();
  });
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const exited = new Promise<Exit>((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    notify();
  });

  const waitForOutput = (pattern: RegExp, waitMs = timeoutMs) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const line = stdout.split("\n").find((candidate) => pattern.test(candidate));
        if (line !== undefined) return done(() => resolve(line));
        if (hasExited)
          return done(() => reject(new Error(`wharf exited before printing ${pattern}\n${stdout}\n${stderr}`)));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`no ${pattern} within ${waitMs} ms\n${stdout}\n${stderr}`))),
        waitMs,
      );
      const done = (settle: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        settle();
      };
      waiters.add(check);
      check();
    });

  const stop = async (waitMs = 10_000): Promise<Exit> => {
    if (!hasExited) child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), waitMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  let line: string;
  try {
    line = await waitForOutput(/Wharf listening on /);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  const match = /Wharf listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(line);
  if (!match?.[1] || !match[2]) {
    child.kill("SIGKILL");
    throw new Error(`unexpected listening line: ${line}`);
  }
  return {
    url: match[1],
    port: Number(match[2]),
    pid: child.pid ?? -1,
    stdout: () => stdout,
    stderr: () => stderr,
    waitForOutput,
    exited,
    stop,
  };
}
