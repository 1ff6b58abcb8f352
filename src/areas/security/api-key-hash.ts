import { createHash, randomBytes } from "node:crypto";

/** API keys are stored as their SHA-256 only and found by hash lookup (PRODUCT.md security baseline). */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** A new random key: 32 bytes, URL-safe, no `:` (so it never looks like a user:password pseudo-key). */
export function generateApiKey(): string {
  return randomBytes(32).toString("base64url");
}
