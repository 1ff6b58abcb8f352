import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";

export interface ScryptParams {
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

/** scrypt parameters (OWASP minimum: N=2^17 is recommended for new systems, 2^15 keeps logins fast). */
const PARAMS: ScryptParams = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 64;
const MAX_MEMORY = 128 * PARAMS.N * PARAMS.r * 2;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LENGTH, { ...options, maxmem: MAX_MEMORY }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/**
 * `scrypt$N$r$p$<salt base64>$<hash base64>`: parameters travel with the hash so they can be raised
 * later. `params` is for test fixtures only (a cheap hash for users a test stores directly): nothing
 * the server or the CLI calls passes it, and no setting reaches it.
 */
export async function hashPassword(password: string, params: ScryptParams = PARAMS): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, params);
  return ["scrypt", params.N, params.r, params.p, salt.toString("base64"), hash.toString("base64")].join("$");
}

/**
 * A stored form that no password matches, with today's parameters: checked when a user is unknown
 * or has no password, so that such a sign-in costs what a wrong password costs.
 */
export const UNMATCHABLE_HASH = [
  "scrypt",
  PARAMS.N,
  PARAMS.r,
  PARAMS.p,
  Buffer.alloc(16).toString("base64"),
  Buffer.alloc(KEY_LENGTH).toString("base64"),
].join("$");

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64");
  const actual = await derive(password, Buffer.from(salt, "base64"), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
