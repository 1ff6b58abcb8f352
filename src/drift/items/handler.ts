import type { Executor, ProcessInfo } from "../executor.js";
import type { DesiredItem, Difference, InstalledPackage, RunContext } from "../model.js";

/**
 * What one item type does (issue 13 section 2), written once for every transport: `prepare` works
 * out the desired state (a template expanded, a package resolved), `collect` reads the actual
 * state through the executor, `compare` lists what differs (only the properties the item
 * declares), `apply` makes the target match, `describe` says what apply does or would do.
 * Anything thrown before compare makes the item `unknown` with the error's message, so messages
 * name paths and variables, never content.
 */
export interface ItemHandler<Desired = unknown, Actual = unknown> {
  prepare(item: DesiredItem, run: ItemRun): Desired | Promise<Desired>;
  collect(desired: Desired, run: ItemRun): Promise<Actual>;
  compare(desired: Desired, actual: Actual): Difference[];
  /** Called only when compare found differences. */
  apply(desired: Desired, actual: Actual, run: ItemRun): Promise<Applied>;
  /** The change apply would make, in the present tense without "would" ("write /etc/app.conf (...)"). */
  describe(desired: Desired, actual: Actual): string;
  /**
   * True when items of this type never depend on one another's changes (one path each), so that
   * the engine may apply consecutive ones a few at a time (over SSH, round trips overlap).
   */
  readonly independent?: boolean;
}

export interface Applied {
  /** What was done, past tense: "wrote /etc/app.conf (sha256 ab12.. -> cd34..)". */
  readonly description: string;
  readonly installed?: InstalledPackage;
}

/** One pass over a server's items: the executor, the run's context, and what the pass shares. */
export interface ItemRun {
  readonly executor: Executor;
  readonly ctx: RunContext;
  /** The target's processes, listed once per pass. */
  processes(): Promise<readonly ProcessInfo[] | undefined>;
  /** Creates a missing directory and its parents (mkdir -p), each at most once per pass, so concurrent changes do not race. */
  ensureDirectory(path: string): Promise<void>;
}

/** An item the engine cannot judge, for a reason the user can fix (the message says which). */
export class ItemUnknownError extends Error {
  override readonly name = "ItemUnknownError";
}

/** The first 12 hex digits of a SHA-256, for descriptions: "ab12cd34ef56..". */
export function shortHash(sha256: string | null | undefined): string {
  return sha256 === null || sha256 === undefined ? "none" : `${sha256.slice(0, 12)}..`;
}
