import { describe, expect, it } from "vitest";
import { jsonCostProblem, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../../src/domain/json-depth.js";

describe("jsonCostProblem", () => {
  it("counts nesting and values outside strings only", () => {
    expect(jsonCostProblem(`${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`)).toBeUndefined();
    expect(jsonCostProblem(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`)).toBe("depth");
    // Siblings do not add up: depth returns to where it was.
    expect(jsonCostProblem(`[${"[[]],".repeat(1000)}[]]`, 3)).toBeUndefined();
    expect(jsonCostProblem(`{"a":"${"[{,".repeat(100_000)}"}`)).toBeUndefined();
    expect(jsonCostProblem('{"a":"\\"[[[[","b":"\\\\"}', 1)).toBeUndefined();
    expect(jsonCostProblem('{"a":"\\\\",[[]]}', 2)).toBe("depth");
  });

  it("stops at the first bound crossed: the issue's body of empty objects is refused by its first values", () => {
    const values = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(",")}}`;
    expect(jsonCostProblem(values(MAX_JSON_VALUES))).toBeUndefined();
    expect(jsonCostProblem(values(MAX_JSON_VALUES + 1))).toBe("values");
    // Too deep further on, but the values bound comes first: nothing after it is read.
    const hostile = `{${'"k":{},'.repeat(MAX_JSON_VALUES)}"deep":${"[".repeat(100)}`;
    expect(jsonCostProblem(hostile)).toBe("values");
  });

  it("leaves invalid JSON to JSON.parse: an unterminated string ends the scan", () => {
    expect(jsonCostProblem('{"a":"[[[[[[')).toBeUndefined();
    expect(jsonCostProblem("")).toBeUndefined();
  });
});
