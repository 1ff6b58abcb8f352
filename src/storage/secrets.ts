import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/**
 * Secrets at rest (docs/PRODUCT.md security baseline: stored secrets are encrypted with an
 * operator-provided key and never returned): connector passwords now, SSH credentials and webhook
 * secrets later. AES-256-GCM with a random 96-bit IV per value; the `purpose` is authenticated
 * data, so a value sealed for one use does not open as another. A sealed value is text:
 *
 *     v1:<key id>:<iv>:<tag>:<ciphertext>        (base64, key id: 16 hex digits)
 *
 * The key id is a hash of the key, so a value names the key that sealed it without revealing it,
 * and rotation (secret-keys.ts) knows which values to seal again: previous keys only open.
 */
export interface SecretBox {
  /** Sealed under the current key. */
  seal(plaintext: string, purpose: string): string;
  /**
   * The plaintext. A value that is not sealed (stored before Wharf encrypted secrets) is returned
   * as it is: reseal() at start-up seals those. Throws SecretUnreadableError when no configured
   * key sealed it, or when it was altered or sealed for another purpose.
   */
  open(stored: string, purpose: string): string;
  /**
   * The value sealed under the current key when it is not already (plaintext, or sealed under a
   * previous key); undefined when it is. Throws SecretUnreadableError as open() does.
   */
  reseal(stored: string, purpose: string): string | undefined;
}

/** A 32-byte key; its id names it in sealed values. */
export interface SecretKey {
  readonly id: string;
  readonly key: Buffer;
}

export class SecretUnreadableError extends Error {
  override readonly name = "SecretUnreadableError";
}

export const SECRET_KEY_BYTES = 32;
const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SEALED = /^v1:([0-9a-f]{16}):([A-Za-z0-9+/]+={0,2}):([A-Za-z0-9+/]+={0,2}):([A-Za-z0-9+/]*={0,2})$/;

/**
 * A key given as 64 hex digits or as base64 (standard or URL alphabet) of exactly 32 bytes;
 * undefined for anything else.
 */
export function parseSecretKey(text: string): SecretKey | undefined {
  const trimmed = text.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) key = Buffer.from(trimmed, "hex");
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) key = Buffer.from(trimmed, "base64");
  if (key?.length !== SECRET_KEY_BYTES) return undefined;
  return { id: keyIdOf(key), key };
}

/** A new random key, as base64 (what a generated key file holds). */
export function generateSecretKey(): string {
  return randomBytes(SECRET_KEY_BYTES).toString("base64");
}

function keyIdOf(key: Buffer): string {
  return createHash("sha256").update("wharf secret key id\0").update(key).digest("hex").slice(0, 16);
}

/** `previous` keys only open values sealed under them; the current one seals everything. */
export function createSecretBox(current: SecretKey, previous: readonly SecretKey[] = []): SecretBox {
  const keys = new Map<string, Buffer>();
  for (const { id, key } of [current, ...previous]) if (!keys.has(id)) keys.set(id, key);

  function seal(plaintext: string, purpose: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", current.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(purpose, "utf8"));
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    const parts = [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString("base64"));
    return [VERSION, current.id, ...parts].join(":");
  }

  /** [key id, plaintext] of a sealed value; undefined for one that is not sealed. */
  function unseal(stored: string, purpose: string): [string, string] | undefined {
    const match = SEALED.exec(stored);
    if (match === null) return undefined;
    const [, id = "", iv = "", tag = "", ciphertext = ""] = match;
    const key = keys.get(id);
    if (key === undefined) {
      throw new SecretUnreadableError(
        `it was encrypted with secret key ${id}, which is neither the current key (${current.id}) ` +
          "nor one of the previous keys (WHARF_SECRET_KEY_PREVIOUS)",
      );
    }
    try {
      // A fixed tag length: GCM would otherwise accept a truncated tag, which is easier to forge.
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(purpose, "utf8"));
      decipher.setAuthTag(Buffer.from(tag, "base64"));
      const plaintext = Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64")), decipher.final()]);
      return [id, plaintext.toString("utf8")];
    } catch {
      throw new SecretUnreadableError(`it does not decrypt with secret key ${id}: it was altered`);
    }
  }

  return {
    seal,
    open(stored, purpose) {
      return unseal(stored, purpose)?.[1] ?? stored;
    },
    reseal(stored, purpose) {
      const opened = unseal(stored, purpose);
      if (opened === undefined) return seal(stored, purpose);
      const [id, plaintext] = opened;
      return id === current.id ? undefined : seal(plaintext, purpose);
    },
  };
}
