import { formatVersion, type UpackVersion } from "./upack-version.js";

/**
 * A text key whose plain binary ordering (SQLite's default TEXT collation, JavaScript's `<` on
 * ASCII) follows compareVersions, so `ORDER BY sort_key DESC` lists versions newest first straight
 * from an index, without loading every version into JavaScript.
 *
 * Contract:
 * - compareVersions(a, b) < 0 implies versionSortKey(a) < versionSortKey(b), with one documented
 *   exception below;
 * - versions that compareVersions calls equal but whose text differs (`1.0.0-01` and `1.0.0-1`,
 *   `1.0.0+01` and `1.0.0+1`) get different keys ordered by their canonical text, so the order is
 *   total and every listing is deterministic; only equal versions get equal keys.
 *
 * The exception: Inedo.UPack compares build metadata numerically when both sides are integers and
 * ordinally otherwise, which is not transitive ("9" < "10" numerically, "10" < "1a" and "1a" < "9"
 * ordinally), so no key can reproduce it. Here integer builds sort below non-integer builds; the
 * library agrees whenever the non-integer build starts with a letter (git hashes like `abc1234`,
 * `build.5`, `sha.x`), and otherwise the two versions differ only in build metadata.
 *
 * The key is ASCII: every field is self-delimiting (no field's encoding is a prefix of another's),
 * so keys compare field by field whatever follows.
 */
export function versionSortKey(version: UpackVersion): string {
  return (
    natural(version.major) +
    natural(version.minor) +
    natural(version.patch) +
    prereleaseKey(version.prerelease) +
    buildKey(version.build) +
    // Tie-break between versions that compare equal but are spelled differently.
    `|${formatVersion(version)}`
  );
}

// Same test as upack-version.ts: what .NET's BigInteger.TryParse accepts among identifier characters.
const INTEGER_PATTERN = /^-?[0-9]+$/;

// Below every character a prerelease identifier or build can contain ([0-9A-Za-z.-]).
const STRING_END = "!";

/**
 * A non-negative integer, order-preserving and self-delimiting at any precision: the number of
 * digits of the digit count (one digit, since no JavaScript string has 10^10 characters), the
 * digit count, then the digits. More digits means larger; the same count compares digit by digit.
 */
function natural(value: bigint): string {
  const digits = value.toString();
  const count = String(digits.length);
  return String(count.length - 1) + count + digits;
}

/** Any integer: negatives first, ordered by the nines' complement of their magnitude (reversed). */
function signed(value: bigint): string {
  if (value >= 0n) return "1" + natural(value);
  return "0" + natural(-value).replace(/[0-9]/g, (digit) => String(9 - Number(digit)));
}

/**
 * A release ("2") sorts above any prerelease ("1" + identifiers + "0"). Each identifier: numeric
 * "1" + signed, below alphanumeric "2" + text + STRING_END; the closing "0" is below both, so a
 * shorter list whose identifiers all match sorts first.
 */
function prereleaseKey(prerelease: string | undefined): string {
  if (prerelease === undefined) return "2";
  let key = "1";
  for (const identifier of prerelease.split(".")) {
    key += INTEGER_PATTERN.test(identifier) ? "1" + signed(BigInt(identifier)) : "2" + identifier + STRING_END;
  }
  return key + "0";
}

/** No build ("2") sorts above any build ("1"): integers ("0" + signed) below other text ("1" + text). */
function buildKey(build: string | undefined): string {
  if (build === undefined) return "2";
  return INTEGER_PATTERN.test(build) ? "10" + signed(BigInt(build)) : "11" + build + STRING_END;
}
