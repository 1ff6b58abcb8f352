import { createSecretBox, generateSecretKey, parseSecretKey, type SecretBox } from "../../src/storage/secrets.js";

/** A secret box (storage/secrets.ts) on a newly generated key. */
export function newSecretBox(): SecretBox {
  const key = parseSecretKey(generateSecretKey());
  if (key === undefined) throw new Error("a generated secret key must parse");
  return createSecretBox(key);
}
