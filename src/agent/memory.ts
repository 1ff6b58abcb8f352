import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/**
 * Gives memory back after a work item: a large check leaves its heap grown (the items, their
 * results, the JSON both ways), and V8 shrinks it only under pressure, so that an agent idling
 * for hours would keep the resident size of its largest work. One full collection once the work
 * is reported costs a few milliseconds and returns most of it (bench/agent.ts measures both).
 * `--expose-gc` is set at run time, for this function only.
 */
let collect: (() => void) | undefined | null = null;

/**
 * Keeps V8's young generation at its first size. The `wharf` command runs with a large one
 * (--max-semi-space-size=8, for the server's throughput), which an agent grows into while it
 * loads and then keeps: some 15 MB of heap reserved for nothing. Called before the agent loads its
 * modules; an agent's allocations are few and short-lived, collected as cheaply in a small one.
 */
export function keepHeapSmall(): void {
  setFlagsFromString("--semi-space-growth-factor=1");
}

/**
 * Runs the agent's JavaScript in V8's interpreter and baseline compiler only, without the
 * optimising compilers (Maglev, TurboFan). Their machine code is part of the node binary, and a
 * check that runs them pages in some 6 MB of it that stays resident for good: an idle agent went
 * from about 56 to 63 MB after its first 1,000-file check. What the agent runs is I/O, hashing and
 * JSON (native code either way): the same check takes the same CPU time without them
 * (bench/agent.ts). Called before the agent loads its modules.
 */
export function skipOptimizingCompilers(): void {
  setFlagsFromString("--no-opt");
  setFlagsFromString("--no-maglev");
}

export function releaseMemory(): void {
  if (collect === null) {
    try {
      setFlagsFromString("--expose-gc");
      collect = runInNewContext("gc") as () => void;
    } catch {
      collect = undefined;
    }
  }
  collect?.();
}
