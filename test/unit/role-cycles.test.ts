import { describe, expect, it } from "vitest";
import { refuseCycle } from "../../src/areas/configuration/role-cycles.js";
import { DomainError } from "../../src/domain/errors.js";

/** Role dependency cycles (issue 13 section 1): refused, named. */
const names = new Map([
  [1, "a"],
  [2, "b"],
  [3, "c"],
  [4, "d"],
]);
const messageOf = (work: () => void): string => {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe("ROLE_CYCLE");
    return (error as DomainError).message;
  }
  throw new Error("no cycle was refused");
};

describe("refuseCycle", () => {
  it("accepts a diamond and refuses the edge that closes a cycle, naming the path", () => {
    // d -> b, d -> c, c -> a, b -> a: a diamond, no cycle.
    const edges = new Map([
      [4, [2, 3]],
      [3, [1]],
      [2, [1]],
    ]);
    expect(() => refuseCycle(edges, names, { id: 4, name: "d" }, [2, 3])).not.toThrow();
    expect(messageOf(() => refuseCycle(edges, names, { id: 1, name: "a" }, [4]))).toBe(
      "The role dependencies would form a cycle: a -> d -> b -> a.",
    );
    expect(messageOf(() => refuseCycle(edges, names, { id: 1, name: "a" }, [3]))).toContain("a -> c -> a");
  });

  it("follows a long chain without overflowing the stack", () => {
    const length = 200_000;
    const edges = new Map<number, number[]>();
    for (let id = 1; id < length; id++) edges.set(id, [id + 1]);
    expect(() => refuseCycle(edges, new Map(), { id: length + 1, name: "top" }, [1])).not.toThrow();
    expect(messageOf(() => refuseCycle(edges, new Map(), { id: length, name: "last" }, [1]))).toMatch(
      /^The role dependencies would form a cycle: last -> 1 -> 2 -> .* -> 199999 -> last\.$/,
    );
  });
});
