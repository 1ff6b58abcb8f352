/**
 * A one-line progress bar for long transfers (`wharf push`). Written here rather than taken from a
 * library: redrawing one line with '\r' at most ten times a second is all it needs, and that fits in
 * fewer lines than wiring up cli-progress's options would. Drawn only on a terminal; elsewhere
 * (CI logs, pipes) nothing is drawn and the caller prints one plain line at the end.
 */

/** Where the bar is drawn: process.stderr, or a stand-in in tests. */
export interface ProgressOutput {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(text: string): unknown;
}

export interface Progress {
  /** `done` bytes of the total have gone; redraws at most every REDRAW_MS. */
  update(done: number): void;
  /** Clears the bar (the caller then prints its result line). */
  finish(): void;
}

const REDRAW_MS = 100;
const NO_PROGRESS: Progress = { update: () => undefined, finish: () => undefined };

/** A bar for `total` bytes on `output`, or one that draws nothing when `output` is not a terminal. */
export function createProgress(
  output: ProgressOutput,
  total: number,
  label: string,
  now: () => number = Date.now,
): Progress {
  if (output.isTTY !== true) return NO_PROGRESS;
  const started = now();
  let drawnAt = Number.NEGATIVE_INFINITY;
  let drawn = false;
  const draw = (done: number) => {
    const seconds = Math.max((now() - started) / 1000, 0.001);
    const fraction = total > 0 ? Math.min(done / total, 1) : 1;
    const figures =
      ` ${String(Math.floor(fraction * 100)).padStart(3)}% ` +
      `${formatBytes(done)}/${formatBytes(total)} ${formatBytes(done / seconds)}/s`;
    const width = Math.max(10, Math.min(40, (output.columns ?? 80) - label.length - figures.length - 4));
    const filled = Math.round(fraction * width);
    output.write(`\r${label} [${"#".repeat(filled)}${"-".repeat(width - filled)}]${figures}\u001b[K`);
    drawn = true;
  };
  return {
    update(done) {
      const time = now();
      if (time - drawnAt < REDRAW_MS && done < total) return;
      drawnAt = time;
      draw(done);
    },
    finish() {
      if (drawn) output.write("\r\u001b[K");
    },
  };
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

/** 1536 -> "1.5 KiB": binary units, one decimal from KiB on. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
}
