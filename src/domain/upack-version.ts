/**
 * Universal package versions exactly as Inedo.UPack's UniversalPackageVersion parses, orders and
 * prints them (docs/compat.md 1.4): clients sort, pick "latest" and verify downloads with that library,
 * so any other ordering would make the server and its clients disagree about which version is which.
 *
 * Two deliberate departures from plain SemVer 2, both inherited from Inedo.UPack (docs/compat.md 11):
 * - leading zeros are accepted and numbers are arbitrary precision (BigInteger there, bigint here);
 *   `01.2.3` therefore parses to the same numbers as `1.2.3` and prints as `1.2.3`;
 * - build metadata is part of the identity and of the order: `1.0.0` and `1.0.0+abc` are two
 *   versions, and the one without build metadata sorts above the one with it.
 *
 * One departure of our own: a version is at most MAX_VERSION_LENGTH characters (see there).
 */
export interface UpackVersion {
  readonly major: bigint;
  readonly minor: bigint;
  readonly patch: bigint;
  /** Without the leading `-`; absent for a release (an empty prerelease does not exist). */
  readonly prerelease?: string;
  /** Without the leading `+`; absent when there is no build metadata. */
  readonly build?: string;
}

/**
 * The longest version text accepted anywhere: uploads, manifests, dependencies, paths and query
 * arguments. Neither SemVer nor Inedo.UPack sets a limit, but BigInt parsing and printing grow
 * faster than the number of digits: a version of a million digits held the event loop for
 * seconds, and would have been echoed in every listing. Real versions are far shorter; three
 * 20-digit numbers (past 64 bits, past anything a build server counts to) with a prerelease and
 * build like `-ci.20240102.1+sha.0123456789abcdef` still fit.
 */
export const MAX_VERSION_LENGTH = 128;

// The library's pattern. JavaScript's `$` (no `m` flag) only matches at the very end, whereas .NET's
// also matches before a final "\n"; we do not reproduce that quirk, so "1.0.0\n" is rejected here.
const VERSION_PATTERN = /^([0-9]+)\.([0-9]+)\.([0-9]+)(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?$/;

// What .NET's BigInteger.TryParse (NumberStyles.Integer) accepts among the characters a prerelease
// or build can contain: digits with an optional leading minus. So `1.0.0--5` has the identifier
// "-5", which the library compares as the number -5.
const INTEGER_PATTERN = /^-?[0-9]+$/;

/**
 * The version, or undefined when Inedo.UPack would reject the text or it is longer than
 * MAX_VERSION_LENGTH (checked first, before any pattern or number is looked at).
 */
export function parseVersion(text: string): UpackVersion | undefined {
  if (typeof text !== "string" || text.length > MAX_VERSION_LENGTH) return undefined;
  const match = VERSION_PATTERN.exec(text);
  if (!match) return undefined;
  const [, major = "", minor = "", patch = "", prerelease, build] = match;
  const version: { -readonly [K in keyof UpackVersion]: UpackVersion[K] } = {
    major: BigInt(major),
    minor: BigInt(minor),
    patch: BigInt(patch),
  };
  if (prerelease !== undefined) version.prerelease = prerelease;
  if (build !== undefined) version.build = build;
  return version;
}

export interface FormatVersionOptions {
  /** Defaults to true (the library's "G" format); false gives its "U" format used in file names. */
  includeBuild?: boolean;
}

/** Why parseVersion refused `text`, for an error message: "is not a valid version" or its length. */
export function versionProblem(text: string): string {
  return text.length > MAX_VERSION_LENGTH
    ? `is longer than ${MAX_VERSION_LENGTH} characters`
    : "is not a valid version";
}

/** The canonical text: numbers without leading zeros, then `-prerelease` and `+build` as parsed. */
export function formatVersion(version: UpackVersion, options: FormatVersionOptions = {}): string {
  let text = `${version.major}.${version.minor}.${version.patch}`;
  if (version.prerelease !== undefined) text += `-${version.prerelease}`;
  if ((options.includeBuild ?? true) && version.build !== undefined) text += `+${version.build}`;
  return text;
}

/** Parses and prints again, e.g. `01.2.3+b` -> `1.2.3+b`; undefined for an invalid version. */
export function canonicalVersion(text: string): string | undefined {
  const version = parseVersion(text);
  return version === undefined ? undefined : formatVersion(version);
}

/**
 * Negative, zero or positive like Inedo.UPack's Compare: numbers first, then prerelease (a release
 * sorts above any prerelease), then build metadata (no build sorts above any build).
 *
 * Like the library this can return 0 for versions that are not equal (`1.0.0-01` and `1.0.0-1`
 * compare numerically but differ as text); use versionsEqual for identity.
 */
export function compareVersions(a: UpackVersion, b: UpackVersion): number {
  return (
    compareBigInts(a.major, b.major) ||
    compareBigInts(a.minor, b.minor) ||
    compareBigInts(a.patch, b.patch) ||
    comparePrerelease(a.prerelease, b.prerelease) ||
    compareBuild(a.build, b.build)
  );
}

/** Inedo.UPack's Equals: equal numbers, and prerelease and build equal as exact (ordinal) text. */
export function versionsEqual(a: UpackVersion, b: UpackVersion): boolean {
  return (
    a.major === b.major &&
    a.minor === b.minor &&
    a.patch === b.patch &&
    a.prerelease === b.prerelease &&
    a.build === b.build
  );
}

export function isPrerelease(version: UpackVersion): boolean {
  return version.prerelease !== undefined;
}

export interface PickLatestOptions {
  /**
   * Skip prereleases: upack's default and pgutil's `latest` want the highest stable version, while
   * the server's own `latest` (docs/compat.md 2.13) includes prereleases, hence the default false.
   */
  stableOnly?: boolean;
}

/** The item with the highest version by compareVersions; the first one wins a tie. */
export function pickLatest<T>(
  items: Iterable<T>,
  versionOf: (item: T) => UpackVersion,
  options: PickLatestOptions = {},
): T | undefined {
  let best: T | undefined;
  let bestVersion: UpackVersion | undefined;
  for (const item of items) {
    const version = versionOf(item);
    if (options.stableOnly && isPrerelease(version)) continue;
    if (bestVersion === undefined || compareVersions(version, bestVersion) > 0) {
      best = item;
      bestVersion = version;
    }
  }
  return best;
}

/** pickLatest over bare versions. */
export function latestVersion(
  versions: Iterable<UpackVersion>,
  options: PickLatestOptions = {},
): UpackVersion | undefined {
  return pickLatest(versions, (version) => version, options);
}

function compareBigInts(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Ordinal comparison of UTF-16 code units, as .NET's string.CompareOrdinal. Only ASCII can reach it.
function compareOrdinal(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function comparePrerelease(a: string | undefined, b: string | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? 1 : -1;
  const left = a.split(".");
  const right = b.split(".");
  const shared = Math.min(left.length, right.length);
  for (let index = 0; index < shared; index++) {
    const x = left[index] ?? "";
    const y = right[index] ?? "";
    const xNumeric = INTEGER_PATTERN.test(x);
    const yNumeric = INTEGER_PATTERN.test(y);
    // Numeric identifiers sort below alphanumeric ones.
    if (xNumeric !== yNumeric) return xNumeric ? -1 : 1;
    const diff = xNumeric ? compareBigInts(BigInt(x), BigInt(y)) : compareOrdinal(x, y);
    if (diff !== 0) return diff;
  }
  return left.length - right.length === 0 ? 0 : left.length < right.length ? -1 : 1;
}

// Build metadata is compared whole (not split on dots): numerically when both sides are integers.
function compareBuild(a: string | undefined, b: string | undefined): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? 1 : -1;
  if (INTEGER_PATTERN.test(a) && INTEGER_PATTERN.test(b)) return compareBigInts(BigInt(a), BigInt(b));
  return compareOrdinal(a, b);
}
