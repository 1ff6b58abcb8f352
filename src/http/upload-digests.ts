import type { IncomingHttpHeaders } from "node:http";
import { invalid } from "../domain/errors.js";

/** Digests a client claims for uploaded bytes (packages, assets), as lowercase hex, verified by the blob store's put. */
export type ClaimedDigests = Partial<Record<Algorithm, string>>;
type Algorithm = "sha1" | "sha256" | "sha512" | "md5";

const HEX_LENGTH: Record<Algorithm, number> = { sha1: 40, sha256: 64, sha512: 128, md5: 32 };
const CHECKSUM_HEADERS: Record<string, Algorithm> = {
  "x-checksum-sha1": "sha1",
  "x-checksum-sha256": "sha256",
  "x-checksum-sha512": "sha512",
  "x-checksum-md5": "md5",
};
/** RFC 3230 `Digest` names (`SHA` is SHA-1) and RFC 9530 `Content-Digest` names; others are ignored, as both RFCs say. */
const DIGEST_NAMES: Record<string, Algorithm> = { sha: "sha1", "sha-256": "sha256", "sha-512": "sha512", md5: "md5" };
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Every digest the request claims for the uploaded package (docs/PRODUCT.md: verified before commit):
 * `X-Checksum-Sha1/-Sha256/-Sha512/-Md5` (hex), `Digest: SHA-256=<base64>, SHA=<base64>` and
 * `Content-Digest: sha-256=:<base64>:`. With a JSON or form body they describe the package content
 * (the decoded `content-b64` or the `content-url` download), which is what is stored. Throws
 * invalid for a malformed value or two headers that disagree.
 */
export function claimedDigests(headers: IncomingHttpHeaders): ClaimedDigests {
  const claimed: ClaimedDigests = {};
  const claim = (algorithm: Algorithm, hex: string, header: string) => {
    const before = claimed[algorithm];
    if (before !== undefined && before !== hex) {
      throw invalid("DIGEST_HEADERS_DISAGREE", `The ${header} header disagrees with another digest header.`);
    }
    claimed[algorithm] = hex;
  };

  for (const [header, algorithm] of Object.entries(CHECKSUM_HEADERS)) {
    const value = single(headers[header])?.trim();
    if (value === undefined) continue;
    if (!new RegExp(`^[0-9a-fA-F]{${HEX_LENGTH[algorithm]}}$`).test(value)) {
      throw invalid(
        "INVALID_DIGEST_HEADER",
        `The ${header} header must be ${HEX_LENGTH[algorithm]} hexadecimal digits.`,
      );
    }
    claim(algorithm, value.toLowerCase(), header);
  }
  for (const { name, value } of listMembers(single(headers.digest))) {
    const algorithm = DIGEST_NAMES[name];
    if (algorithm) claim(algorithm, base64ToHex(value, algorithm, "Digest"), "Digest");
  }
  for (const { name, value } of listMembers(single(headers["content-digest"]))) {
    const algorithm = DIGEST_NAMES[name];
    if (!algorithm) continue;
    // A structured-field byte sequence: `:<base64>:`.
    const match = /^:([^:]*):$/.exec(value);
    if (!match) throw invalid("INVALID_DIGEST_HEADER", `The Content-Digest ${name} value must be written :<base64>:.`);
    claim(algorithm, base64ToHex(match[1] ?? "", algorithm, "Content-Digest"), "Content-Digest");
  }
  return claimed;
}

function single(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.join(",") : value;
  return text === undefined || text.trim() === "" ? undefined : text;
}

/** `a=1, b=2;param` -> [{a, 1}, {b, 2}]; names lowercased, parameters dropped. */
function listMembers(header: string | undefined): Array<{ name: string; value: string }> {
  if (header === undefined) return [];
  return header.split(",").flatMap((member) => {
    const [pair = ""] = member.split(";");
    const equals = pair.indexOf("=");
    if (equals <= 0) return [];
    return [{ name: pair.slice(0, equals).trim().toLowerCase(), value: pair.slice(equals + 1).trim() }];
  });
}

function base64ToHex(value: string, algorithm: Algorithm, header: string): string {
  const bytes = BASE64.test(value) ? Buffer.from(value, "base64") : undefined;
  if (bytes === undefined || bytes.length * 2 !== HEX_LENGTH[algorithm]) {
    throw invalid("INVALID_DIGEST_HEADER", `The ${header} header has a malformed ${algorithm} value.`);
  }
  return bytes.toString("hex");
}
