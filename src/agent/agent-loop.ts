import { setTimeout as sleep } from "node:timers/promises";
import { AgentHttpError, type AgentConnection } from "./connection.js";
import { releaseMemory } from "./memory.js";
import { MAX_POLL_WAIT_SECONDS } from "./protocol.js";
import { runWork } from "./run-work.js";

/**
 * The agent's life: long-poll Wharf, run what it hands over, one work item at a time, report, poll
 * again. Wharf down or unreachable: retried with jittered exponential backoff (1 s doubling to
 * 30 s), so that a fleet of agents does not hammer a Wharf coming back. A refused key (401, 403:
 * revoked) ends the agent with exit code 1: retrying would not help. `signal` (SIGTERM) ends it
 * with 0, after reporting the work it was doing as stopped.
 */
export interface AgentLoopOptions {
  readonly connection: AgentConnection;
  /** For messages only. */
  readonly serverUrl: URL;
  readonly root: string;
  readonly version: string;
  readonly signal: AbortSignal;
  readonly note: (line: string) => void;
  /** Longest poll (seconds); Wharf holds at most 25. */
  readonly waitSeconds?: number;
}

const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 30_000;

/** Full jitter between half and all of the doubled delay. */
export function backoffMs(failures: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.min(failures, 10));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** Runs until stopped (0) or refused (1); returns the exit code. */
export async function runAgentLoop(options: AgentLoopOptions): Promise<number> {
  const { connection, signal, note } = options;
  const wait = Math.min(options.waitSeconds ?? MAX_POLL_WAIT_SECONDS, MAX_POLL_WAIT_SECONDS);
  let failures = 0;
  let connected = false;
  while (!signal.aborted) {
    let answer: Awaited<ReturnType<AgentConnection["poll"]>>;
    try {
      // The first poll answers at once: the agent says it is connected (or why not) right away.
      answer = await connection.poll(connected ? wait : 0, signal);
    } catch (error) {
      if (signal.aborted) break;
      if (error instanceof AgentHttpError && (error.status === 401 || error.status === 403)) {
        note(
          `wharf agent: Wharf refused the agent key (HTTP ${error.status}: ${error.message}) ` +
            "Stopping: ask an administrator for the server's new key and start the agent with it.",
        );
        return 1;
      }
      const delay = backoffMs(failures++);
      const why = error instanceof AgentHttpError ? `HTTP ${error.status}: ${error.message}` : describe(error);
      note(
        `wharf agent: cannot poll ${options.serverUrl.href} (${why}); trying again in ${(delay / 1000).toFixed(1)} s`,
      );
      connected = false;
      await sleep(delay, undefined, { signal }).catch(() => undefined);
      continue;
    }
    if (!connected) {
      connected = true;
      failures = 0;
      const as = answer.serverName === undefined ? "" : ` as server ${answer.serverName}`;
      note(`wharf agent ${options.version}: connected to ${options.serverUrl.href}${as}, root ${options.root}`);
      // What loading the modules left behind goes before the agent settles into its polls.
      releaseMemory();
    }
    for (const work of answer.work) {
      try {
        await runWork(work, { connection, root: options.root, signal, note });
      } catch (error) {
        note(`wharf agent: could not report ${work.kind} ${work.id}: ${describe(error)}`);
      }
    }
    if (answer.work.length > 0) releaseMemory();
  }
  return 0;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  const code = "code" in error && typeof error.code === "string" ? ` (${error.code})` : "";
  return `${error.message}${code}${cause}`;
}
