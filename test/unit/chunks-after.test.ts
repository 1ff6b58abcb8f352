import { describe, expect, it } from "vitest";
import { chunksAfter } from "../../src/storage/batched-writer.js";

/** What a partial writev leaves to write (batched-writer.ts writes batches of an upload's chunks). */
describe("chunksAfter", () => {
  const chunks = [Buffer.from("abc"), Buffer.from("defg"), Buffer.from("hi")];
  const text = (left: Uint8Array[]) => Buffer.concat(left).toString();

  it.each([
    [0, "abcdefghi", 3],
    [1, "bcdefghi", 3],
    [3, "defghi", 2],
    [5, "fghi", 2],
    [7, "hi", 1],
    [8, "i", 1],
    [9, "", 0],
  ])("after %i bytes: %s", (written, rest, count) => {
    const left = chunksAfter(chunks, written);
    expect(text(left)).toBe(rest);
    expect(left).toHaveLength(count);
  });

  it("leaves the caller's chunks as they were", () => {
    chunksAfter(chunks, 5);
    expect(text(chunks)).toBe("abcdefghi");
  });
});
