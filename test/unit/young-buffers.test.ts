import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { collectSocketBuffersYoung } from "../../src/young-buffers.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const RELAY_MIB = 1024;

interface Collections {
  readonly received: number;
  readonly major: number;
  readonly minor: number;
}

function relay(...args: string[]): Promise<Collections> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "test/helpers/socket-relay-gc.ts"), ...args],
      { cwd: ROOT, timeout: 30_000, env: { ...process.env, RELAY_MIB: String(RELAY_MIB) } },
      (error, out) => (error ? reject(error) : resolve(JSON.parse(out) as Collections)),
    );
  });
}

// V8 13.6 (Node.js 24) is where the default changed; on Node.js 22 both runs collect young.
const defaultCollectsOld = Number(process.versions.v8.split(".")[0]) >= 13;

describe("socket buffers are collected young (src/young-buffers.ts)", () => {
  // Typical counts for 1 GiB: 1-2 full and about 31 young collections with the setting; 14 full
  // and 1 young without it on Node.js 24. The bounds leave room for a busy machine (a full
  // collection or two more, from the loader or the heap's growth).
  it("relaying 1 GiB over a socket takes young collections, not full ones", async () => {
    const tuned = await relay("tuned");
    expect(tuned.received).toBe(RELAY_MIB * 1024 * 1024);
    expect(tuned.minor).toBeGreaterThanOrEqual(10);
    expect(tuned.major).toBeLessThanOrEqual(5);
  });

  it.runIf(defaultCollectsOld)("without it, this Node.js frees them in full collections", async () => {
    const untuned = await relay();
    expect(untuned.major).toBeGreaterThanOrEqual(8);
  });

  it("leaves a value passed on the command line alone", () => {
    expect(collectSocketBuffersYoung(["--scavenger-max-new-space-capacity-mb=16"])).toBe(false);
    expect(collectSocketBuffersYoung(["--scavenger-max-new-space-capacity-mb", "16"])).toBe(false);
  });
});
