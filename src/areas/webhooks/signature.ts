import { createHmac, randomBytes } from "node:crypto";

/**
 * The signature of a delivery: `X-Wharf-Signature: t=<unix seconds>,v1=<hex HMAC-SHA-256>` over
 * `<t>.<body>` with the webhook's secret (the scheme Stripe made familiar). The timestamp is signed
 * with the body, so a receiver that refuses old timestamps (say, over five minutes) cannot be fed a
 * recorded request again; the v1 prefix leaves room for another scheme beside it later.
 */
export const SIGNATURE_HEADER = "X-Wharf-Signature";
export const EVENT_HEADER = "X-Wharf-Event";
export const DELIVERY_HEADER = "X-Wharf-Delivery";

export function signatureOf(secret: string, body: string, at: Date): string {
  const t = Math.floor(at.getTime() / 1000);
  const v1 = createHmac("sha256", secret).update(`${t}.${body}`, "utf8").digest("hex");
  return `t=${t},v1=${v1}`;
}

/** A new secret: 32 random bytes, prefixed so that a leaked one is recognisable in a scan. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}
