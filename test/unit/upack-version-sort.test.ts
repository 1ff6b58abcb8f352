import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { versionSortKey } from "../../src/domain/upack-version-sort.js";
import { compareVersions, formatVersion, parseVersion, type UpackVersion } from "../../src/domain/upack-version.js";

const v = (text: string): UpackVersion => {
  const version = parseVersion(text);
  if (!version) throw new Error(`test setup: ${text} should parse`);
  return version;
};

// Deterministic PRNG (mulberry32) so a failure reproduces; the seed is in the test name.
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const EDGE_CASES = [
  "0.0.0",
  "0.0.1",
  "0.1.0",
  "1.0.0",
  "9.0.0",
  "10.0.0",
  "99.99.99",
  "100.0.0",
  "1.0.0-0",
  "1.0.0-00",
  "1.0.0-1",
  "1.0.0-01",
  "1.0.0--1",
  "1.0.0--0",
  "1.0.0--10",
  "1.0.0--9",
  "1.0.0-a",
  "1.0.0-A",
  "1.0.0-a.1",
  "1.0.0-a.b",
  "1.0.0-a..b",
  "1.0.0-.a",
  "1.0.0-.",
  "1.0.0--",
  "1.0.0---",
  "1.0.0-a-",
  "1.0.0-alpha",
  "1.0.0-alpha.1",
  "1.0.0-alpha.beta",
  "1.0.0-beta",
  "1.0.0-beta.2",
  "1.0.0-beta.11",
  "1.0.0-rc.1",
  "1.0.0-rc.1+build.1",
  "1.0.0+0",
  "1.0.0+1",
  "1.0.0+01",
  "1.0.0+9",
  "1.0.0+10",
  "1.0.0+-5",
  "1.0.0+-10",
  "1.0.0+abc",
  "1.0.0+build.5",
  "1.0.0+a.b",
  "1.0.0-1+1",
  "123456789012345678901234567890.0.0",
  "123456789012345678901234567891.0.0",
  "1.0.0-123456789012345678901234567890",
  "1.0.0-99999999999999999999",
  "1.0.0--99999999999999999999",
  "2.0.0-CI.20240102",
];

const ALPHABET = "0123456789-.aAzZ";

function randomVersion(next: () => number): UpackVersion {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const number = () => pick(["0", "1", "2", "9", "10", "11", "007", "100", "18446744073709551616"]);
  const identifier = () => {
    const length = 1 + Math.floor(next() * 4);
    let text = "";
    for (let i = 0; i < length; i++) text += pick(ALPHABET.replace(".", "").split(""));
    return next() < 0.15 ? "" : text;
  };
  let text = `${number()}.${number()}.${number()}`;
  if (next() < 0.7) {
    const count = 1 + Math.floor(next() * 3);
    const parts = Array.from({ length: count }, () => (next() < 0.5 ? number() : identifier()));
    const prerelease = parts.join(".");
    if (/^[0-9A-Za-z.-]+$/.test(prerelease)) text += `-${prerelease}`;
  }
  if (next() < 0.4) {
    const build = next() < 0.5 ? (next() < 0.2 ? "-" : "") + number() : identifier() + "." + identifier();
    if (/^[0-9A-Za-z.-]+$/.test(build)) text += `+${build}`;
  }
  return v(text);
}

const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const isInteger = (text: string) => /^-?[0-9]+$/.test(text);

/** What the key order must be: compareVersions, refined by canonical text, except the documented build case. */
function expectedOrder(a: UpackVersion, b: UpackVersion): number {
  const withoutBuild = (x: UpackVersion): UpackVersion => ({ ...x, build: undefined });
  if (
    a.build !== undefined &&
    b.build !== undefined &&
    isInteger(a.build) !== isInteger(b.build) &&
    compareVersions(withoutBuild(a), withoutBuild(b)) === 0
  ) {
    return isInteger(a.build) ? -1 : 1;
  }
  return sign(compareVersions(a, b)) || compareText(formatVersion(a), formatVersion(b));
}

function checkPairs(versions: UpackVersion[]): void {
  const keys = versions.map(versionSortKey);
  for (let i = 0; i < versions.length; i++) {
    for (let j = 0; j < versions.length; j++) {
      const a = versions[i] as UpackVersion;
      const b = versions[j] as UpackVersion;
      const actual = compareText(keys[i] as string, keys[j] as string);
      if (actual !== expectedOrder(a, b)) {
        expect.fail(`${formatVersion(a)} vs ${formatVersion(b)}: keys ${keys[i]} / ${keys[j]} give ${actual}`);
      }
    }
  }
}

describe("versionSortKey", () => {
  it("orders the edge cases exactly like compareVersions", () => {
    checkPairs(EDGE_CASES.map(v));
  });

  it.each([1, 2, 3, 42, 2024])("orders 300 random versions like compareVersions (seed %i)", (seed) => {
    const next = random(seed);
    checkPairs([...Array.from({ length: 300 }, () => randomVersion(next)), ...EDGE_CASES.map(v)]);
  });

  it("gives equal keys only to equal versions", () => {
    expect(versionSortKey(v("01.2.3"))).toBe(versionSortKey(v("1.2.3")));
    expect(versionSortKey(v("1.0.0-01"))).not.toBe(versionSortKey(v("1.0.0-1")));
    expect(versionSortKey(v("1.0.0"))).not.toBe(versionSortKey(v("1.0.0+0")));
  });

  it("sorts like compareVersions in SQLite's ORDER BY", () => {
    const next = random(7);
    const versions = [...Array.from({ length: 500 }, () => randomVersion(next)), ...EDGE_CASES.map(v)];
    const db = new Database(":memory:");
    db.exec("CREATE TABLE t (version TEXT NOT NULL, sort_key TEXT NOT NULL) STRICT");
    const insert = db.prepare("INSERT INTO t (version, sort_key) VALUES (?, ?)");
    for (const version of versions) insert.run(formatVersion(version), versionSortKey(version));
    const fromSql = db.prepare<[], { version: string }>("SELECT version FROM t ORDER BY sort_key DESC").all();
    db.close();
    const sorted = [...versions].sort((a, b) => expectedOrder(b, a)).map((x) => formatVersion(x));
    expect(fromSql.map((row) => row.version)).toEqual(sorted);
  });

  it("puts integer builds below other builds (the one departure from Inedo.UPack)", () => {
    const order = ["1.0.0+9", "1.0.0+10", "1.0.0+1a", "1.0.0+abc", "1.0.0"];
    const keys = order.map((text) => versionSortKey(v(text)));
    expect([...keys].sort()).toEqual(keys);
    // The library itself is not transitive here: 9 < 10 (numbers), 10 < 1a and 1a < 9 (text).
    expect(compareVersions(v("1.0.0+1a"), v("1.0.0+9"))).toBeLessThan(0);
  });

  it("keeps keys ASCII and bounded relative to the version text", () => {
    const version = v("123456789012345678901234567890.1.2-alpha.10.beta+build.77");
    const key = versionSortKey(version);
    expect(key).toMatch(/^[\x21-\x7e]+$/);
    expect(key.length).toBeLessThan(3 * formatVersion(version).length + 40);
  });
});
