import { describe, expect, it } from "vitest";
import { createCircuitBreaker } from "../../src/areas/connectors/circuit.js";
import { remotePackagesOf, remoteVersionsOf, sortedVersions } from "../../src/areas/upack/remote/entries.js";

/**
 * The pure parts of connectors: the circuit breaker's states and backoff (circuit.ts), and how
 * an upstream's PackageData/VersionData are made safe to pass on (remote/entries.ts).
 */

describe("circuit breaker", () => {
  it("opens after three consecutive failures, probes once per backoff, doubles it up to the cap", () => {
    const circuit = createCircuitBreaker({ baseBackoffMs: 1_000, maxBackoffMs: 3_000 });
    circuit.failed("a", 0);
    circuit.failed("a", 0);
    expect(circuit.admit("a", 0)).toEqual({ admitted: true });
    circuit.failed("a", 0);
    expect(circuit.admit("a", 999)).toEqual({ admitted: false, retryInMs: 1, failures: 3 });
    expect(circuit.admit("b", 999)).toEqual({ admitted: true }); // per upstream
    expect(circuit.admit("a", 1_000)).toEqual({ admitted: true }); // the probe
    expect(circuit.admit("a", 1_000).admitted).toBe(false); // only one at a time
    circuit.failed("a", 1_000);
    expect(circuit.admit("a", 2_999).admitted).toBe(false); // 2 s now
    expect(circuit.admit("a", 3_000).admitted).toBe(true);
    circuit.failed("a", 3_000);
    expect(circuit.admit("a", 5_999).admitted).toBe(false); // 4 s capped at 3 s
    expect(circuit.admit("a", 6_000).admitted).toBe(true);
    circuit.succeeded("a");
    expect(circuit.admit("a", 6_000)).toEqual({ admitted: true });
    circuit.failed("a", 6_000);
    expect(circuit.admit("a", 6_000)).toEqual({ admitted: true }); // forgotten: one failure is not three
  });
});

describe("remote entries", () => {
  const all = () => true;

  it("drops packages a client could not parse, normalises the rest, marks them remote", () => {
    const body = [
      { name: "ok", versions: ["1.0.0", "bad", "02.0.0"], latestVersion: "1.0.0", downloads: "7", isLocal: true },
      { name: "bad name!", versions: ["1.0.0"] },
      { name: "no-versions", versions: ["x"] },
      { group: "/bad/", name: "g", versions: ["1.0.0"] },
      "not an object",
      { group: "", name: "tags", versions: ["1.0.0"], tags: ["a", 1], dependencies: ["a:b:c:d", "g/n:1.0.0"] },
    ];
    const packages = remotePackagesOf(body, all);
    expect(packages.map((p) => p.name)).toEqual(["ok", "tags"]);
    expect(packages[0]?.json).toMatchObject({
      latestVersion: "2.0.0",
      versions: ["2.0.0", "1.0.0"],
      downloads: "7",
      isLocal: false,
      isCached: false,
      isVirtual: false,
    });
    expect(packages[1]?.json).toMatchObject({ tags: ["a"], dependencies: ["g/n:1.0.0"] });
    expect(JSON.stringify(packages[1]?.json)).not.toContain('"group"');
    expect(remotePackagesOf({ not: "an array" }, all)).toEqual([]);
  });

  it("keeps a version's sha1, size and date only when valid; drops the file list unless asked for", () => {
    const body = [
      { name: "a", version: "1.0.0", sha1: "ABCDEF".padEnd(40, "0"), size: "12", published: "2024-01-02T03:04:05Z" },
      { name: "a", version: "2.0.0", sha1: "nope", size: -1, published: "yesterday", fileList: [{ name: "x" }] },
      { name: "a", version: "not a version" },
    ];
    const [first, second, ...rest] = remoteVersionsOf(body, all, false);
    expect(rest).toEqual([]);
    expect(first?.sha1).toBe("abcdef".padEnd(40, "0"));
    expect(first?.json).toMatchObject({ size: 12, published: "2024-01-02T03:04:05.000Z" });
    expect(second?.sha1).toBeUndefined();
    expect(JSON.parse(JSON.stringify(second?.json))).not.toHaveProperty("sha1");
    expect(JSON.parse(JSON.stringify(second?.json))).not.toHaveProperty("fileList");
    expect(remoteVersionsOf(body, all, true)[1]?.json.fileList).toEqual([{ name: "x" }]);
    expect(remoteVersionsOf(body, (_group, name) => name !== "a", false)).toEqual([]);
  });

  it("sorts versions newest first by the Inedo.UPack ordering, each once", () => {
    expect(sortedVersions(["1.0.0-beta", "1.0.0", "1.0.0+b", "01.0.0", "0.9.0", "1.0.0-alpha"])).toEqual([
      "1.0.0",
      "1.0.0+b",
      "1.0.0-beta",
      "1.0.0-alpha",
      "0.9.0",
    ]);
  });
});
