import { hash, randomBytes } from "node:crypto";

/**
 * API keys are stored as their SHA-256 only and found by hash lookup (docs/PRODUCT.md security
 * baseline). Hashed on every authenticated request: the one-shot `hash` costs a third of a
 * Hash object's create, update and digest.
 */
export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex");
}

/**
 * A new random key: 32 bytes, URL-safe, no `:` (so it never looks like a user:password pseudo-key),
 * and never starting with `-`, which command lines (`wharf push --api-key K`, getopt tools) would
 * take for an option: one key in 64 did.
 */
export function generateApiKey(): string {
  for (;;) {
    const key = randomBytes(32).toString("base64url");
    if (!key.startsWith("-")) return key;
  }
}
