import { describe, expect, it } from "vitest";
import { OLDEST_SUPPORTED_NODE, unsupportedNodeMessage } from "../../src/supported-node.js";

describe("the Node.js versions Wharf starts on", () => {
  it("accepts 22.14 and later, 24 and newer majors", () => {
    for (const version of ["22.14.0", "v22.23.3", "24.0.0", "24.21.0", "26.1.0"])
      expect(unsupportedNodeMessage(version)).toBeUndefined();
  });

  it("refuses an older Node with one line naming both versions, before better-sqlite3 could crash it", () => {
    for (const version of ["20.20.2", "v22.13.1", "18.0.0", "22.2.0"]) {
      const message = unsupportedNodeMessage(version);
      expect(message).toContain(`Node.js ${OLDEST_SUPPORTED_NODE} or later`);
      expect(message).toContain(`this is Node.js ${version.replace(/^v/, "")}`);
    }
  });

  it("names the same oldest version as package.json's engines", async () => {
    const { default: pkg } = await import("../../package.json", { with: { type: "json" } });
    expect(pkg.engines.node).toBe(`>=${OLDEST_SUPPORTED_NODE}`);
  });
});
