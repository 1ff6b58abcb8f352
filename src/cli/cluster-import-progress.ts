import type { BlobCopyProgress } from "./cluster-import-blobs.js";
import { formatBytes } from "./progress.js";
import { duration } from "./storage-progress.js";

/**
 * The progress lines `wharf cluster import` writes on stderr, as `wharf storage move` does: plain
 * lines (readable in a CI log or a pipe as on a terminal), at most one a second while a phase
 * runs, and always its last one.
 */

const EVERY_MS = 1_000;

export interface RowCopyProgress {
  /** The table being copied. */
  readonly table: string;
  readonly tables: { readonly done: number; readonly total: number };
  readonly rows: { readonly done: number; readonly total: number };
}

export interface ImportProgress {
  blobs(progress: BlobCopyProgress): void;
  rows(progress: RowCopyProgress): void;
  /** A line said at once (a phase begins or ends). */
  say(line: string): void;
}

export function importProgress(err: (line: string) => void, now: () => number = Date.now): ImportProgress {
  let saidAt = Number.NEGATIVE_INFINITY;
  const started = now();
  const throttled = (line: string, last: boolean) => {
    const time = now();
    if (!last && time - saidAt < EVERY_MS) return;
    saidAt = time;
    err(line);
  };
  return {
    blobs({ total, done, skipped }) {
      const percent = total.bytes > 0 ? Math.floor((100 * done.bytes) / total.bytes) : 100;
      const seconds = (now() - started) / 1000;
      throttled(
        `blobs: ${done.blobs}/${total.blobs}, ${formatBytes(done.bytes)}/${formatBytes(total.bytes)} (${percent}%), ` +
          `${skipped} already in the object store, ${duration(seconds)}`,
        done.blobs === total.blobs,
      );
    },
    rows({ table, tables, rows }) {
      const percent = rows.total > 0 ? Math.floor((100 * rows.done) / rows.total) : 100;
      throttled(
        `tables: ${tables.done}/${tables.total}, rows: ${rows.done}/${rows.total} (${percent}%), ${table}`,
        tables.done === tables.total,
      );
    },
    say: err,
  };
}
