import fs from "node:fs";
import path from "node:path";
import { keepHeapSmall, skipOptimizingCompilers } from "../agent/memory.js";
import { parseAgentServerUrl } from "../agent/agent-url.js";
import { openConnection } from "../agent/connection.js";
import { WHARF_VERSION } from "../version.js";
import { type CommandIo, type CommandLine, type Print, runCommand, UsageError } from "./command.js";

/**
 * `wharf agent`: runs the configuration agent of one `agent` server on the machine it manages
 * (issue 13 section 3; src/agent). Loads only the agent's modules: no server, no database.
 */
export const AGENT_USAGE = `Usage:
  wharf agent --server <url> --root <dir> [--key <agent key>] [--ca <file>]

Runs the configuration agent of one 'agent' server: it long-polls Wharf for checks and
remediations, runs them on this machine inside --root, and reports results and log lines.

Options:
  --server <url>   Wharf's URL, https://... (plain http:// only to this machine: localhost, 127.0.0.1)
  --root <dir>     the directory item paths are confined to (/etc/app.conf is <dir>/etc/app.conf)
  --key <key>      the server's agent key (default: the WHARF_AGENT_KEY environment variable,
                   which keeps it out of the process list)
  --ca <file>      PEM certificate(s) to trust for Wharf's HTTPS (a private CA)

Exit codes: 0 stopped (SIGTERM, SIGINT), 1 the key was refused (revoked: start it with the new key),
2 bad arguments.`;

const OPTIONS = {
  server: { type: "string" },
  root: { type: "string" },
  key: { type: "string" },
  ca: { type: "string" },
} as const;

export interface AgentCommandContext extends CommandIo {
  readonly err: Print;
  readonly env: NodeJS.ProcessEnv;
}

export function agentCommand(args: string[], ctx: AgentCommandContext): Promise<number> {
  return runCommand({ usage: AGENT_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run({ values, positionals }: CommandLine<typeof OPTIONS>, ctx: AgentCommandContext): Promise<number> {
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (values.server === undefined) throw new UsageError("--server is required");
  if (values.root === undefined || values.root === "") throw new UsageError("--root is required");
  const key = values.key ?? ctx.env.WHARF_AGENT_KEY;
  if (key === undefined || key.trim() === "")
    throw new UsageError("the agent key is required: --key or WHARF_AGENT_KEY");
  let serverUrl: URL;
  try {
    serverUrl = parseAgentServerUrl(values.server);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const ca = values.ca === undefined ? undefined : readCa(values.ca);
  const root = path.resolve(values.root);

  // Before the engine's modules load (and would grow the heap for good).
  keepHeapSmall();
  skipOptimizingCompilers();
  const { runAgentLoop } = await import("../agent/agent-loop.js");
  const connection = openConnection({ serverUrl, key: key.trim(), version: WHARF_VERSION, ca });
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    ctx.err(`wharf agent: ${signal}: stopping`);
    stop.abort(new Error(`stopped by ${signal}`));
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  try {
    return await runAgentLoop({
      connection,
      serverUrl,
      root,
      version: WHARF_VERSION,
      signal: stop.signal,
      note: ctx.err,
    });
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
    await connection.close();
  }
}

function readCa(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`--ca: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}
