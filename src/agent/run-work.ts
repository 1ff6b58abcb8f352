import { checkItems, remediateItems } from "../drift/engine.js";
import { createLocalExecutor } from "../drift/local-executor.js";
import type { LogLevel, RunContext } from "../drift/model.js";
import { type AgentConnection, AgentHttpError } from "./connection.js";
import { AGENT_LIMITS, type LogLine, type WorkItem, type WorkResult } from "./protocol.js";
import { remotePackageSource } from "./remote-packages.js";

/**
 * Runs one work item with the same engine Wharf runs for local servers, on a local executor
 * confined to the agent's root, and reports back: log lines in batches (which also renew the
 * work's lease on Wharf, an empty batch at least every quarter of it), then the result.
 */
export interface RunWorkOptions {
  readonly connection: AgentConnection;
  readonly root: string;
  /** Aborted when the agent stops (SIGTERM): the work ends with an error result. */
  readonly signal: AbortSignal;
  /** The agent's own output (standard error). */
  readonly note: (line: string) => void;
}

/** Lines are posted at most this often (fewer, larger posts for chatty work). */
const LOG_FLUSH_MS = 200;
/** What a result post may take when the agent is stopping. */
const STOPPING_POST_MS = 2000;

export async function runWork(work: WorkItem, options: RunWorkOptions): Promise<void> {
  const { connection, signal } = options;
  // Aborted by the agent stopping, or by Wharf no longer waiting for this work (404 on a log post).
  const controller = new AbortController();
  const onStop = () => controller.abort(new Error("The agent was stopped before it finished this work."));
  signal.addEventListener("abort", onStop, { once: true });
  const log = createLogBatcher(work.id, connection, controller);
  const heartbeatMs = Math.max(250, (work.leaseSeconds * 1000) / 4);
  const heartbeat = setInterval(() => void log.flush(true), heartbeatMs);
  const started = performance.now();
  let result: WorkResult;
  try {
    result = await execute(work, options.root, {
      variables: new Map(Object.entries(work.variables)),
      packages: remotePackageSource(connection, work),
      signal: controller.signal,
      log: log.add,
    });
  } catch (error) {
    const reason = controller.signal.aborted ? controller.signal.reason : error;
    result = { results: [], changes: [], error: reason instanceof Error ? reason.message : String(reason) };
  } finally {
    clearInterval(heartbeat);
    signal.removeEventListener("abort", onStop);
  }
  await log.flush(false);
  const postSignal = signal.aborted ? AbortSignal.timeout(STOPPING_POST_MS) : signal;
  try {
    await connection.postResult(work.id, result, postSignal);
  } catch (error) {
    if (!(error instanceof AgentHttpError && error.status === 404)) throw error;
    options.note(`wharf agent: Wharf no longer waits for ${work.kind} ${work.id}: ${error.message}`);
    return;
  }
  const drifted = result.results.filter((item) => item.status === "drifted").length;
  const outcome =
    result.error ?? `${result.results.length} items, ${drifted} drifted, ${result.changes.length} changes`;
  options.note(`wharf agent: ${work.kind} ${work.id}: ${outcome} (${Math.round(performance.now() - started)} ms)`);
}

async function execute(work: WorkItem, root: string, ctx: RunContext): Promise<WorkResult> {
  const executor = await createLocalExecutor(root, { description: `agent ${root}` });
  try {
    if (work.kind === "check") return { results: await checkItems(work.items, executor, ctx), changes: [] };
    const { changes, results } = await remediateItems(work.items, executor, ctx, { simulate: work.simulate });
    return { results, changes };
  } finally {
    await executor.close();
  }
}

/** Collects log lines and posts them in order, one post at a time. */
function createLogBatcher(workId: string, connection: AgentConnection, controller: AbortController) {
  const pending: LogLine[] = [];
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<void> = Promise.resolve();
  let flushedAt = performance.now();

  function flush(evenEmpty: boolean): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    flushedAt = performance.now();
    if (pending.length === 0 && !evenEmpty) return chain;
    const lines = pending.splice(0, AGENT_LIMITS.logLines);
    chain = chain.then(async () => {
      try {
        await connection.postLog(
          workId,
          lines,
          controller.signal.aborted ? AbortSignal.timeout(STOPPING_POST_MS) : controller.signal,
        );
      } catch (error) {
        // Wharf gave up on this work (lease, cancel): stop working on it.
        if (error instanceof AgentHttpError && error.status === 404) controller.abort(new Error(error.message));
        // Otherwise (Wharf briefly unreachable) the lines are lost; the result still goes.
      }
    });
    if (pending.length > 0) return flush(false);
    return chain;
  }

  return {
    add(level: LogLevel, message: string): void {
      pending.push({ level, message: message.slice(0, AGENT_LIMITS.logLineChars) });
      // By the clock as well as by a timer: a busy engine may keep timers waiting, and these
      // posts are also what keeps the work's lease alive.
      if (pending.length >= AGENT_LIMITS.logLines || performance.now() - flushedAt >= LOG_FLUSH_MS) void flush(false);
      else timer ??= setTimeout(() => void flush(false), LOG_FLUSH_MS);
    },
    flush,
  };
}
