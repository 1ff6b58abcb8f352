import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultMaxConnections, openFileLimit } from "../../src/http/fd-limit.js";
import { addressListMatcher } from "../../src/net/address-list.js";

describe("the default connection bound", () => {
  it("is half of the descriptors left after a reserve, between 16 and 10,000", () => {
    expect(defaultMaxConnections(4096)).toBe(1984);
    expect(defaultMaxConnections(1024)).toBe(448);
    expect(defaultMaxConnections(1_048_576)).toBe(10_000);
    expect(defaultMaxConnections(Number.POSITIVE_INFINITY)).toBe(10_000);
    expect(defaultMaxConnections(100)).toBe(16);
    expect(defaultMaxConnections(undefined)).toBe(448);
  });

  it("reads the soft limit on open files from a limits file, undefined when there is none", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-limits-"));
    const file = path.join(dir, "limits");
    await fs.writeFile(
      file,
      "Limit                     Soft Limit           Hard Limit           Units     \n" +
        "Max processes             127431               127431               processes \n" +
        "Max open files            4096                 524288               files     \n",
    );
    expect(openFileLimit(file)).toBe(4096);
    await fs.writeFile(file, "Max open files            unlimited            unlimited            files     \n");
    expect(openFileLimit(file)).toBe(Number.POSITIVE_INFINITY);
    expect(openFileLimit(path.join(dir, "missing"))).toBeUndefined();
    await fs.rm(dir, { recursive: true });
  });
});

describe("addressListMatcher", () => {
  it("matches addresses and ranges, IPv4-mapped addresses as IPv4, and nothing else", () => {
    const trusted = addressListMatcher(["10.0.0.0/8", "192.168.1.5", "fd00::/8"]);
    expect(trusted("10.1.2.3")).toBe(true);
    expect(trusted("::ffff:10.1.2.3")).toBe(true);
    expect(trusted("192.168.1.5")).toBe(true);
    expect(trusted("192.168.1.6")).toBe(false);
    expect(trusted("fd12::1")).toBe(true);
    expect(trusted("fe80::1")).toBe(false);
    expect(trusted("")).toBe(false);
  });
});
