import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_VARIABLES } from "../../src/config.js";

const README = readFileSync(path.join(import.meta.dirname, "..", "..", "README.md"), "utf8");

/** The first column of the Configuration section's table rows. */
function documentedVariables(): Set<string> {
  const start = README.indexOf("\n## Configuration\n");
  const end = README.indexOf("\n## ", start + 1);
  expect(start, "README has a Configuration section").toBeGreaterThan(0);
  const rows = README.slice(start, end).matchAll(/^\| `([A-Z0-9_]+)`/gm);
  return new Set([...rows].map((row) => row[1] ?? ""));
}

describe("README Configuration table", () => {
  it("documents every variable the server reads", () => {
    const documented = documentedVariables();
    expect(CONFIG_VARIABLES.length).toBeGreaterThan(40);
    expect(CONFIG_VARIABLES.filter((name) => !documented.has(name))).toEqual([]);
  });
});
