import { describe, expect, it } from "vitest";
import { createProgress, formatBytes } from "../../src/cli/progress.js";

/** The progress bar of `wharf push`: drawn on a terminal only, at most ten times a second, cleared at the end. */

function terminal(isTTY: boolean) {
  const written: string[] = [];
  return { output: { isTTY, columns: 80, write: (text: string) => written.push(text) }, written };
}

describe("push progress bar", () => {
  it("draws one self-overwriting line on a terminal, throttled, and clears it", () => {
    const { output, written } = terminal(true);
    let clock = 0;
    const progress = createProgress(output, 4 * 1024 * 1024, "app 1.0.0", () => clock);
    clock = 1000;
    progress.update(1024 * 1024);
    clock = 1050; // within 100 ms of the last redraw: skipped
    progress.update(2 * 1024 * 1024);
    clock = 2000;
    progress.update(4 * 1024 * 1024);
    progress.finish();
    const clearToEnd = "\u001b[K";
    expect(written).toHaveLength(3);
    expect(written[0]).toMatch(/^\rapp 1\.0\.0 \[#+-+\] {2}25% 1\.0 MiB\/4\.0 MiB 1\.0 MiB\/s/);
    expect(written[1]).toMatch(/^\rapp 1\.0\.0 \[#+\] 100% 4\.0 MiB\/4\.0 MiB 2\.0 MiB\/s/);
    expect(written.slice(0, 2).every((line) => line.endsWith(clearToEnd))).toBe(true);
    expect(written[2]).toBe(`\r${clearToEnd}`);
    expect(written[0]?.length).toBeLessThanOrEqual(80 + 4);
  });

  it("draws nothing when the output is not a terminal (CI logs, pipes)", () => {
    const { output, written } = terminal(false);
    const progress = createProgress(output, 100, "app", () => 0);
    progress.update(50);
    progress.update(100);
    progress.finish();
    expect(written).toEqual([]);
  });

  it("formats sizes in binary units", () => {
    expect([0, 1023, 1536, 5 * 1024 * 1024, 3 * 1024 ** 3].map(formatBytes)).toEqual([
      "0 B",
      "1023 B",
      "1.5 KiB",
      "5.0 MiB",
      "3.0 GiB",
    ]);
  });
});
