import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { compileSources } from "../e2e/build.js";

/**
 * Real `wharf agent` processes for tests and benchmarks: src/ compiled once (as test/e2e/build.ts
 * does, file by file, so the module graph is the installed one) into a scratch directory inside
 * the repository (node_modules and migrations resolve as from src/), started as `node main.js agent`.
 */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CACHE = path.join(ROOT, "node_modules/.cache/wharf-agent-test");

export interface CompiledCli {
  /** The compiled src/cli/main.js. */
  readonly cli: string;
  /**
   * A module for `node --import` that appends every module URL the process resolves to
   * WHARF_TEST_MODULE_LOG, and at exit the Node modules it loaded (`node-internal <name>`).
   */
  readonly moduleLogger: string;
  remove(): Promise<void>;
}

export async function compileCli(): Promise<CompiledCli> {
  await fs.mkdir(CACHE, { recursive: true });
  const outDir = await fs.mkdtemp(path.join(CACHE, "run-"));
  await compileSources(outDir);
  const hooks = path.join(outDir, "module-log-hooks.mjs");
  await fs.writeFile(
    hooks,
    `import fs from "node:fs";
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (process.env.WHARF_TEST_MODULE_LOG) fs.appendFileSync(process.env.WHARF_TEST_MODULE_LOG, resolved.url + "\\n");
  return resolved;
}
`,
  );
  const moduleLogger = path.join(outDir, "module-log.mjs");
  await fs.writeFile(
    moduleLogger,
    // At exit, also Node's own modules it loaded (as "node-internal <name>" lines), which no hook sees.
    `import fs from "node:fs";
import { register } from "node:module";
register(${JSON.stringify(new URL(`file://${hooks}`).href)});
process.once("exit", () => {
  if (!process.env.WHARF_TEST_MODULE_LOG) return;
  const internal = process.moduleLoadList.map((entry) => "node-internal " + entry.replace(/^NativeModule /, ""));
  fs.appendFileSync(process.env.WHARF_TEST_MODULE_LOG, internal.join("\\n") + "\\n");
});
`,
  );
  return {
    cli: path.join(outDir, "src/cli/main.js"),
    moduleLogger,
    remove: () => fs.rm(outDir, { recursive: true, force: true }),
  };
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface AgentProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Everything it printed so far (standard error and output). */
  output(): string;
  /** Resolves once its output matches (what it already printed included). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<string>;
  readonly exited: Promise<Exit>;
  /** SIGTERM, then its exit (SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<Exit>;
}

export interface AgentStart {
  readonly server: string;
  readonly key: string;
  readonly root: string;
  readonly env?: Record<string, string>;
  /** Node options before the script (e.g. --import a module logger). */
  readonly nodeArgs?: readonly string[];
  readonly args?: readonly string[];
}

/** The parent's environment without WHARF_* variables (a developer's shell must not leak in). */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("WHARF_")));
  return { ...clean, ...env };
}

/** Starts `wharf agent --server <url> --root <dir>` with the key in WHARF_AGENT_KEY. */
export function startAgent(cli: string, start: AgentStart): AgentProcess {
  const child = spawn(
    process.execPath,
    [
      "--max-semi-space-size=8",
      ...(start.nodeArgs ?? []),
      cli,
      "agent",
      "--server",
      start.server,
      "--root",
      start.root,
      ...(start.args ?? []),
    ],
    { cwd: ROOT, env: childEnv({ WHARF_AGENT_KEY: start.key, ...start.env }), stdio: ["ignore", "pipe", "pipe"] },
  );
  return watch(child);
}

/** Runs `wharf <args>` to its end (for refusals that never connect). */
export async function runCli(
  cli: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Exit & { output: string }> {
  const agent = watch(
    spawn(process.execPath, [cli, ...args], { cwd: ROOT, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] }),
  );
  const exit = await agent.exited;
  return { ...exit, output: agent.output() };
}

function watch(child: ChildProcess): AgentProcess {
  let output = "";
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    output += chunk.toString("utf8");
    for (const listener of listeners) listener();
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const exited = new Promise<Exit>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  return {
    child,
    pid: child.pid ?? -1,
    output: () => output,
    waitForOutput(pattern, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match === null) return;
          done();
          resolve(match[0]);
        };
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no output matching ${pattern} within ${timeoutMs} ms; it printed:\n${output}`));
        }, timeoutMs);
        void exited.then(() => setTimeout(check, 10));
        listeners.add(check);
        check();
      });
    },
    exited,
    async stop(timeoutMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      const exit = await exited;
      clearTimeout(timer);
      return exit;
    },
  };
}
