import { describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/areas/security/api-key-hash.js";

describe("generated API keys", () => {
  it("are 43 URL-safe characters, all different, and never start with '-' (taken for an option on a command line)", () => {
    // One base64url character in 64 is '-': 4,000 keys without the rule hold about 62 such starts.
    const keys = Array.from({ length: 4000 }, generateApiKey);
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{42}$/);
  });
});
