import { describe, expect, it } from "vitest";
import { eachConcurrently } from "../../src/domain/concurrently.js";

/** A promise and the function that settles it, for holding work open. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe("eachConcurrently", () => {
  it("runs every item once, never more than the limit at once, starting them in order", async () => {
    const started: number[] = [];
    let running = 0;
    let most = 0;
    await eachConcurrently([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      started.push(item);
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 8 - item));
      running--;
    });
    expect(started).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it("starts nothing more once `more` says no, and finishes what runs", async () => {
    const held = gate();
    const done: number[] = [];
    let stop = false;
    const all = eachConcurrently(
      [1, 2, 3, 4, 5],
      2,
      async (item) => {
        if (item <= 2) await held.promise;
        done.push(item);
      },
      () => !stop,
    );
    stop = true;
    held.open();
    await all;
    expect(done.sort()).toEqual([1, 2]);
  });

  it("rejects with the first failure; an empty list resolves", async () => {
    await expect(
      eachConcurrently([1, 2, 3], 2, async (item) => {
        if (item === 2) throw new Error("item 2 failed");
      }),
    ).rejects.toThrow("item 2 failed");
    await expect(eachConcurrently([], 4, async () => {})).resolves.toBeUndefined();
  });
});
