import type { Readable } from "node:stream";
import { DomainError } from "../domain/errors.js";
import { WHARF_VERSION } from "../version.js";
import type { AddressPolicy } from "./address-class.js";
import { type ResolveHost, parseFetchUrl, resolveWithSystemDns, vetFetchTarget } from "./fetch-target.js";
import { outboundDispatcher } from "./outbound-dispatcher.js";
import { type ProxyRoute, type ProxySettings, createProxyRouter } from "./outbound-proxy.js";
import {
  type OutboundBody,
  type OutboundResponse,
  boundBody,
  discardBody,
  dropBody,
  sendGet,
  toHeaders,
} from "./outbound-request.js";

export type { ResolveHost, ResolvedAddress } from "./fetch-target.js";

export interface GuardedFetchOptions {
  /** Allow 10/8, 172.16/12, 192.168/16, 100.64/10 and fc00::/7 (an administrator's decision). */
  readonly allowPrivate: boolean;
  /** Allow 127/8 and ::1; defaults to `allowPrivate`. */
  readonly allowLoopback?: boolean;
  /** Bound on the whole fetch: DNS, connect, every redirect hop, headers and the body. */
  readonly timeoutMs: number;
  /** Bound on the final body; a larger Content-Length is refused before reading. */
  readonly maxBytes: number;
  /** Redirects followed; one more is an error. 0 refuses every redirect. */
  readonly maxRedirects: number;
  readonly userAgent?: string;
  /** Replaces system DNS (tests); every address it returns is still classified. */
  readonly resolve?: ResolveHost;
  /**
   * The settings timeoutMs and maxBytes come from (WHARF_FETCH_TIMEOUT_MS, WHARF_FETCH_MAX_BYTES),
   * named in the errors they cause so that an administrator knows what would change them; absent
   * when the caller's own bound applies (a connector's timeout).
   */
  readonly settings?: { readonly timeout?: string; readonly maxBytes?: string };
  /** HTTP_PROXY, HTTPS_PROXY and NO_PROXY as config.ts read them; absent: every fetch is direct. */
  readonly proxy?: ProxySettings | undefined;
}

/**
 * Redirects a server-side fetch follows (connector probes and requests, content-url, virtual URL
 * sources, deployment plans' downloads): enough for a feed behind a proxy, a moved server or a
 * CDN, few enough to stay cheap.
 */
export const MAX_REDIRECTS = 5;

/** The settings of a fetch bounded by the server-wide WHARF_FETCH_* values (content-url, virtual sources, plans). */
export const FETCH_SETTINGS = { timeout: "WHARF_FETCH_TIMEOUT_MS", maxBytes: "WHARF_FETCH_MAX_BYTES" } as const;

export interface GuardedFetchInit {
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
  /**
   * Sends this method and body instead of a GET (webhooks). Such a request is never redirected: a
   * redirect is returned as the answer, since following it would resend the body to a place its
   * sender never named (or turn it into a GET).
   */
  readonly send?: OutboundBody;
}

export interface GuardedResponse {
  readonly status: number;
  readonly headers: Headers;
  /**
   * At most `maxBytes` bytes; fails with a `too_large` DomainError past that, with an `unavailable`
   * one on timeout or a broken connection, or with the caller's abort reason. Read it or destroy
   * it (or discard it): until then the connection and the timer stay open (the timer bounds that too).
   */
  readonly body: Readable;
  /**
   * Drops a body the caller does not want (an error page, a 404) while keeping the connection for
   * the next request when the body is short; a long one closes it.
   */
  discard(): void;
  /** The URL after redirects. */
  readonly url: string;
}

/**
 * Fetches a URL with GET under the server-side fetch rules of docs/PRODUCT.md's security baseline.
 * Rejects with a DomainError: `invalid` when the URL or any redirect is refused (bad scheme,
 * credentials, refused address or metadata host, unknown host), `too_large` for a declared
 * length past `maxBytes`, `unavailable` for timeouts, too many redirects and failed connections.
 * A caller's abort rejects with the signal's reason. Statuses other than redirects are returned
 * as they are: what a 404 means is the caller's business.
 */
export type GuardedFetch = (url: string, init?: GuardedFetchInit) => Promise<GuardedResponse>;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Headers that prove who the caller is; they must not follow a redirect to another origin. */
const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization", "cookie", "x-apikey"]);

/**
 * Headers the guard owns: Host must match the URL, a caller cannot widen the body framing, and
 * proxy credentials belong to the proxy's URL, never to a request an upstream would see.
 */
const OWNED_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "te",
  "upgrade",
  "proxy-authorization",
]);

function lowerCaseHeaders(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const lower = name.toLowerCase();
    if (!OWNED_HEADERS.has(lower)) result[lower] = value;
  }
  return result;
}

function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !CREDENTIAL_HEADERS.has(name)));
}

function checkOptions(options: GuardedFetchOptions): void {
  const positive = (value: number) => Number.isFinite(value) && value > 0;
  const count = (value: number) => Number.isInteger(value) && value >= 0;
  if (!positive(options.timeoutMs)) throw new RangeError("timeoutMs must be a positive number");
  if (!count(options.maxBytes)) throw new RangeError("maxBytes must be a non-negative integer");
  if (!count(options.maxRedirects)) throw new RangeError("maxRedirects must be a non-negative integer");
}

/**
 * One controller for the whole fetch. A timer and a listener rather than
 * `AbortSignal.any([AbortSignal.timeout(ms), signal])`: the timer must be cleared the moment the
 * body is done (a fetch guard used by a long-running connector must not pile up timers), and
 * `AbortSignal.any` needs Node 20.3 while `engines` says 20.0.
 */
interface Deadline {
  readonly signal: AbortSignal;
  dispose(): void;
}

function startDeadline(timeoutMs: number, onTimeout: () => Error, caller: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(onTimeout()), timeoutMs);
  const onCallerAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted === true) onCallerAbort();
  else caller?.addEventListener("abort", onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    dispose() {
      clearTimeout(timer);
      caller?.removeEventListener("abort", onCallerAbort);
    },
  };
}

/** Socket and TLS errors carry a code worth showing (ECONNREFUSED, CERT_HAS_EXPIRED); stacks do not. */
function connectionFailed(host: string, error: unknown): DomainError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const detail = typeof code === "string" ? ` (${code})` : "";
  return new DomainError("bad_gateway", "FETCH_FAILED", `Fetching from ${host} failed${detail}.`, { cause: error });
}

export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  checkOptions(options);
  const policy: AddressPolicy = {
    allowPrivate: options.allowPrivate,
    allowLoopback: options.allowLoopback ?? options.allowPrivate,
  };
  const resolve = options.resolve ?? resolveWithSystemDns;
  const userAgent = options.userAgent ?? `Wharf/${WHARF_VERSION}`;
  const { timeoutMs, maxBytes, maxRedirects } = options;
  const proxyFor = createProxyRouter(options.proxy);

  return async function guardedFetch(rawUrl, init = {}) {
    let url = parseFetchUrl(rawUrl, undefined, 0);
    const firstHost = url.hostname;
    const timedOut = () =>
      new DomainError(
        "gateway_timeout",
        "FETCH_TIMEOUT",
        `Fetching from ${firstHost} timed out after ${timeoutMs} ms${named(options.settings?.timeout)}.`,
      );
    const deadline = startDeadline(timeoutMs, timedOut, init.signal);
    // identity: a compressed body would slip a decompression bomb past maxBytes downstream.
    let headers: Record<string, string> = {
      "user-agent": userAgent,
      "accept-encoding": "identity",
      ...lowerCaseHeaders(init.headers),
    };
    try {
      for (let hop = 0; ; hop++) {
        await vetFetchTarget(url, hop, policy, resolve, deadline.signal);
        const route = proxyFor(url);
        if (route !== undefined) await vetProxy(route, policy, resolve, deadline.signal);
        const dispatcher = outboundDispatcher(policy, resolve, route?.uri);
        const response = await sendGet(dispatcher, url, headers, deadline.signal, init.send);
        const { status } = response;
        const redirected = REDIRECT_STATUSES.has(status) && init.send === undefined;
        const location = redirected ? response.headers.location : undefined;
        if (location === undefined)
          return finish(response, url, { maxBytes, setting: options.settings?.maxBytes }, deadline);
        // Read to its end (it is short, or closed), so that the next hop can reuse the connection.
        await discardBody(response.body);
        if (hop >= maxRedirects) {
          throw new DomainError(
            "bad_gateway",
            "FETCH_TOO_MANY_REDIRECTS",
            `Fetching from ${firstHost} was redirected more than ${maxRedirects} times.`,
          );
        }
        // Every method the guard sends is GET, so 301/302/303 (-> GET) and 307/308 (same method)
        // agree; only the destination changes, and it is vetted again on the next turn.
        const next = parseFetchUrl(Array.isArray(location) ? (location[0] ?? "") : location, url, hop + 1);
        if (next.origin !== url.origin) headers = withoutCredentials(headers);
        url = next;
      }
    } catch (error) {
      deadline.dispose();
      if (error instanceof DomainError) throw error;
      if (deadline.signal.aborted) throw deadline.signal.reason;
      throw connectionFailed(url.hostname, error);
    }
  };
}

/**
 * Hands the final response over: refuses a declared length past the limit before reading, and
 * ties the body to the deadline so a stalled or endless body still ends at timeoutMs.
 */
function finish(
  response: OutboundResponse,
  url: URL,
  bound: { readonly maxBytes: number; readonly setting: string | undefined },
  deadline: Deadline,
): GuardedResponse {
  const host = url.hostname;
  const { maxBytes } = bound;
  const declared = Number(response.headers["content-length"] ?? "");
  if (Number.isSafeInteger(declared) && declared > maxBytes) {
    dropBody(response.body);
    throw tooLarge(host, maxBytes, bound.setting);
  }
  const { signal } = deadline;
  if (signal.aborted) {
    // The deadline can pass between the response head arriving and this code running; a listener
    // added now would never fire, leaving a body no timer bounds.
    dropBody(response.body);
    throw signal.reason;
  }
  // A body its caller never started reading (no pipe, iterator or 'data' listener: readableFlowing
  // is still null) is closed quietly: an error nobody listens for would crash the process.
  const onAbort = () => body.destroy(body.readableFlowing === null ? undefined : (signal.reason as Error));
  const body = boundBody(
    response.body,
    maxBytes,
    () => tooLarge(host, maxBytes, bound.setting),
    (error) => connectionFailed(host, error),
    () => {
      signal.removeEventListener("abort", onAbort);
      deadline.dispose();
    },
  );
  signal.addEventListener("abort", onAbort, { once: true });
  return {
    status: response.status,
    headers: toHeaders(response.headers),
    body,
    url: url.href,
    discard: () => void discardBody(body),
  };
}

/**
 * The proxy is a hop like any other (docs/PRODUCT.md security baseline): its address is checked
 * under the same policy before anything is sent to it, and again as its connection is made
 * (outbound-dispatcher.ts). A refused proxy is the server's configuration, not the request's: 502.
 */
async function vetProxy(
  route: ProxyRoute,
  policy: AddressPolicy,
  resolve: ResolveHost,
  signal: AbortSignal,
): Promise<void> {
  try {
    await vetFetchTarget(new URL(route.uri), { proxy: route.variable }, policy, resolve, signal);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const code = error.code === "FETCH_ADDRESS_REFUSED" ? "FETCH_PROXY_REFUSED" : error.code;
    throw new DomainError("bad_gateway", code, error.message, { cause: error });
  }
}

function tooLarge(host: string, maxBytes: number, setting: string | undefined): DomainError {
  const message = `The response from ${host} is larger than ${maxBytes} bytes${named(setting)}.`;
  return new DomainError("too_large", "FETCH_TOO_LARGE", message);
}

/** ` (WHARF_...)`: the setting behind a bound, when there is one. */
const named = (setting: string | undefined) => (setting === undefined ? "" : ` (${setting})`);
