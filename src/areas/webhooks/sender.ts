import type { Clock } from "../../domain/clock.js";
import { DomainError } from "../../domain/errors.js";
import type { GuardedFetch } from "../../net/fetch-guard.js";
import type { DeliveryBody, Webhook } from "./model.js";
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signatureOf } from "./signature.js";
import { renderUrl, urlValuesOf } from "./url-template.js";

/** What one attempt sent and got: a 2xx status is a success, anything else (or no answer) is not. */
export interface AttemptResult {
  readonly ok: boolean;
  readonly url: string | undefined;
  readonly status: number | undefined;
  readonly error: string | undefined;
  readonly durationMs: number;
}

/** What an attempt needs: the webhook as it is now (its URL and headers may have been fixed since). */
export interface AttemptInput {
  readonly webhook: Webhook;
  /** The plaintext secret; never logged or stored. */
  readonly secret: string;
  readonly deliveryId: number;
  readonly body: string;
  readonly signal?: AbortSignal;
}

/**
 * Sends one delivery through the server-side fetch guard (every address checked, link-local and
 * metadata hosts always refused; redirects not followed: a request with a body is never sent on to
 * a place the webhook does not name). The response body is not wanted and is discarded.
 */
export function createSender(fetch: GuardedFetch, clock: Clock) {
  return async function attempt(input: AttemptInput): Promise<AttemptResult> {
    const { webhook, body } = input;
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let url: string | undefined;
    try {
      const parsed = JSON.parse(body) as DeliveryBody;
      url = renderUrl(webhook.urlTemplate, urlValuesOf(parsed));
      const response = await fetch(url, {
        send: { method: webhook.method, body },
        ...(input.signal === undefined ? {} : { signal: input.signal }),
        headers: {
          ...webhook.headers,
          "content-type": "application/json; charset=utf-8",
          [EVENT_HEADER]: parsed.event,
          [DELIVERY_HEADER]: String(input.deliveryId),
          [SIGNATURE_HEADER]: signatureOf(input.secret, body, clock.now()),
        },
      });
      response.discard();
      const ok = response.status >= 200 && response.status < 300;
      const error = ok ? undefined : statusError(response.status, response.headers.get("location"));
      return { ok, url, status: response.status, error, durationMs: elapsed() };
    } catch (error) {
      if (input.signal?.aborted === true) throw error;
      return { ok: false, url, status: undefined, error: describe(error), durationMs: elapsed() };
    }
  };
}

function statusError(status: number, location: string | null): string {
  if (status >= 300 && status < 400 && location !== null) {
    return `The receiver answered ${status} (a redirect, which is not followed: give its final URL).`;
  }
  return `The receiver answered ${status}.`;
}

/** The guard's messages name the host and the reason, never an address or a secret. */
function describe(error: unknown): string {
  if (error instanceof DomainError) return error.message;
  return "The request failed.";
}
