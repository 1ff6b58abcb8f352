/**
 * The configuration engine (issue 13 section 2): checks a server's desired items against what is
 * really on it, and remediates the drifted ones, through any Executor. The Wharf server runs it
 * for `local` and `ssh` servers, `wharf agent` on its own machine; both get the same results.
 *
 * An item that cannot be judged (an unreadable file, a variable that does not exist, a package
 * missing from its feed) is `unknown` with an error and never stops the others. Aborting
 * ctx.signal stops the run between items (the promise rejects with the signal's reason).
 * Nothing sensitive is logged: lines name items and the properties that differ, never content.
 */
import path from "node:path";
import { eachConcurrently } from "../domain/concurrently.js";
import { describeError } from "./items/errors.js";
import type { ItemHandler, ItemRun } from "./items/handler.js";
import { HANDLERS } from "./items/index.js";
import type { Executor, ProcessInfo } from "./executor.js";
import type { AppliedChange, DesiredItem, Difference, ItemResult, RunContext } from "./model.js";

/** Items collected at once: reads only, and over SSH or slow disks the waits overlap. */
const COLLECT_CONCURRENCY = 8;
/** Changes of independent items (see ItemHandler.independent) made at once. */
const APPLY_CONCURRENCY = 8;

interface Observation {
  readonly item: DesiredItem;
  readonly result: ItemResult;
  /** Set when the item was judged: what apply needs. */
  readonly state?: { readonly handler: ItemHandler; readonly desired: unknown; readonly actual: unknown };
}

/** Collects and compares every item; results in the items' order. */
export async function checkItems(
  items: readonly DesiredItem[],
  executor: Executor,
  ctx: RunContext,
): Promise<ItemResult[]> {
  const observations = await observe(items, executor, ctx);
  logSummary("Checked", observations, executor, ctx);
  return observations.map((observation) => observation.result);
}

/**
 * Checks every item, applies the drifted ones in order (a role's directories before its files,
 * dependencies' items first, as the caller ordered them), then checks every item again for the
 * results. With simulate, nothing is changed: changes say what would be done ("would write ...")
 * and results are the first check's. An item whose change failed keeps the second check's status
 * with `error` saying why.
 */
export async function remediateItems(
  items: readonly DesiredItem[],
  executor: Executor,
  ctx: RunContext,
  options: { readonly simulate: boolean },
): Promise<{ changes: AppliedChange[]; results: ItemResult[] }> {
  const run = createRun(executor, ctx);
  const before = await observe(items, executor, ctx, run);
  const drifted = [...before.entries()].filter(
    ([, observation]) => observation.result.status === "drifted" && observation.state !== undefined,
  );
  if (options.simulate) {
    const changes = drifted.map(([, { item, state }]) => {
      const description = `would ${state?.handler.describe(state.desired, state.actual) ?? "change it"}`;
      ctx.log("info", `${label(item)}: ${description}`);
      return { type: item.type, key: item.key, description };
    });
    ctx.log("info", `Simulated: ${changes.length} of ${items.length} items would change on ${executor.description}.`);
    return { changes, results: before.map((observation) => observation.result) };
  }
  const outcomes = new Map<number, AppliedChange | string>();
  const applyOne = async ([index, { item, state }]: readonly [number, Observation]) => {
    ctx.signal.throwIfAborted();
    if (state === undefined) return;
    try {
      const applied = await state.handler.apply(state.desired, state.actual, run);
      ctx.log("info", `${label(item)}: ${applied.description}`);
      outcomes.set(index, {
        type: item.type,
        key: item.key,
        description: applied.description,
        ...(applied.installed ? { installed: applied.installed } : {}),
      });
    } catch (error) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      const message = describeError(error);
      outcomes.set(index, message);
      ctx.log("error", `${label(item)}: not remediated: ${message}`);
    }
  };
  // In order, except that a run of consecutive items of a type whose changes are independent
  // (files: one path each, parents created once per pass) is applied a few at a time.
  for (let at = 0; at < drifted.length;) {
    const first = drifted[at] as [number, Observation];
    let end = at + 1;
    if (first[1].state?.handler.independent === true) {
      while (end < drifted.length && drifted[end]?.[1].item.type === first[1].item.type) end++;
    }
    await eachConcurrently(drifted.slice(at, end), APPLY_CONCURRENCY, applyOne);
    at = end;
  }
  const changes: AppliedChange[] = [];
  const failures = new Map<number, string>();
  for (const [index, outcome] of [...outcomes.entries()].sort(([a], [b]) => a - b)) {
    if (typeof outcome === "string") failures.set(index, outcome);
    else changes.push(outcome);
  }
  const after = await observe(items, executor, ctx, createRun(executor, ctx));
  logSummary("Remediated; checked again", after, executor, ctx);
  const results = after.map(({ result }, index) => {
    const failure = failures.get(index);
    return failure === undefined ? result : { ...result, error: failure };
  });
  return { changes, results };
}

function createRun(executor: Executor, ctx: RunContext): ItemRun {
  let processes: Promise<readonly ProcessInfo[] | undefined> | undefined;
  const directories = new Map<string, Promise<void>>();
  const ensureDirectory = (directory: string): Promise<void> => {
    let made = directories.get(directory);
    if (made === undefined) {
      made = (async () => {
        if ((await executor.stat(directory)) !== undefined) return;
        const parent = path.posix.dirname(directory);
        if (parent !== directory) await ensureDirectory(parent);
        await executor.mkdir(directory);
      })();
      directories.set(directory, made);
    }
    return made;
  };
  return {
    executor,
    ctx,
    processes: () => (processes ??= executor.processes()),
    ensureDirectory,
  };
}

async function observe(
  items: readonly DesiredItem[],
  executor: Executor,
  ctx: RunContext,
  run: ItemRun = createRun(executor, ctx),
): Promise<Observation[]> {
  const observations = new Array<Observation>(items.length);
  await eachConcurrently([...items.entries()], COLLECT_CONCURRENCY, async ([index, item]) => {
    ctx.signal.throwIfAborted();
    observations[index] = await observeOne(item, run);
  });
  return observations;
}

async function observeOne(item: DesiredItem, run: ItemRun): Promise<Observation> {
  const head = { type: item.type, key: item.key, role: item.role };
  const handler = HANDLERS[item.type] as ItemHandler | undefined;
  if (handler === undefined) {
    return { item, result: { ...head, status: "unknown", differences: [], error: `unknown item type ${item.type}` } };
  }
  let differences: Difference[];
  let desired: unknown;
  let actual: unknown;
  try {
    desired = await handler.prepare(item, run);
    actual = await handler.collect(desired, run);
    differences = handler.compare(desired, actual);
  } catch (error) {
    if (run.ctx.signal.aborted) throw run.ctx.signal.reason;
    const message = describeError(error);
    run.ctx.log("warn", `${label(item)}: unknown: ${message}`);
    return { item, result: { ...head, status: "unknown", differences: [], error: message } };
  }
  if (differences.length > 0) {
    run.ctx.log(
      "debug",
      `${label(item)}: drifted (${differences.map((difference) => difference.property).join(", ")})`,
    );
  }
  return {
    item,
    result: { ...head, status: differences.length > 0 ? "drifted" : "current", differences },
    state: { handler, desired, actual },
  };
}

function label(item: DesiredItem): string {
  return `${item.type} ${item.key}`;
}

function logSummary(what: string, observations: readonly Observation[], executor: Executor, ctx: RunContext): void {
  const count = (status: string) => observations.filter((observation) => observation.result.status === status).length;
  ctx.log(
    "info",
    `${what} ${observations.length} items on ${executor.description}: ${count("current")} current, ${count("drifted")} drifted, ${count("unknown")} unknown.`,
  );
}
