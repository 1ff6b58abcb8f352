import type { LookupAddress } from "node:dns";
import type { LookupFunction } from "node:net";
import { Agent, type Dispatcher, Pool, ProxyAgent, type buildConnector } from "undici";
import { DomainError } from "../domain/errors.js";
import { type AddressPolicy, describeCategory } from "./address-class.js";
import { type ResolveHost, firstRefusedCategory, refusalReason } from "./fetch-target.js";

/**
 * The connection pools of server-side fetches (undici), one per address policy, resolver and
 * proxy, shared by every guarded fetch of the process: connections to an upstream are kept alive
 * and reused instead of one TCP (and TLS) handshake per request.
 *
 * A pool is keyed by origin, not by address, so reuse is safe only because every connection is
 * vetted as it is made: `lookup` below resolves the name, refuses it when any of its addresses is
 * refused by the pool's policy, and hands the socket only the addresses it checked. A name that
 * resolves elsewhere later (DNS rebinding) cannot move a connection already made, and a new one is
 * checked again. IP literals never reach `lookup` (Node connects to them as they are): the fetch
 * guard classifies them before every request (fetch-target.ts), and a literal cannot change.
 */

/** Per origin: enough for a feed's parallel metadata and download requests, few enough for any upstream. */
const CONNECTIONS_PER_ORIGIN = 16;
/** Idle connections close after this, or sooner when the upstream's Keep-Alive hint says so. */
const KEEP_ALIVE_MS = 10_000;
const KEEP_ALIVE_MAX_MS = 60_000;
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Time bounds belong to the fetch guard (its deadline) and the connector (its idle timer), which
 * answer with messages naming what timed out; undici's own header and body timeouts are off so
 * that a legitimately slow download is not cut by a second, hidden clock.
 */
const POOL_OPTIONS = {
  connections: CONNECTIONS_PER_ORIGIN,
  keepAliveTimeout: KEEP_ALIVE_MS,
  keepAliveMaxTimeout: KEEP_ALIVE_MAX_MS,
  headersTimeout: 0,
  bodyTimeout: 0,
} as const;

const pools = new WeakMap<ResolveHost, Map<string, Dispatcher>>();

/**
 * The shared dispatcher for this policy and resolver: direct, or through `proxyUri`. The proxy's
 * own address is vetted like any other host (a proxy on a private address needs the same setting
 * as an upstream there); through a proxy, the target's name is resolved by the proxy.
 */
export function outboundDispatcher(policy: AddressPolicy, resolve: ResolveHost, proxyUri?: string): Dispatcher {
  let byKey = pools.get(resolve);
  if (byKey === undefined) {
    byKey = new Map();
    pools.set(resolve, byKey);
  }
  const key = `${policy.allowPrivate}/${policy.allowLoopback}/${proxyUri ?? ""}`;
  let dispatcher = byKey.get(key);
  if (dispatcher === undefined) {
    const connect = { lookup: vettedLookup(policy, resolve), timeout: CONNECT_TIMEOUT_MS };
    dispatcher =
      proxyUri === undefined
        ? new Agent({ ...POOL_OPTIONS, connect })
        : new ProxyAgent({
            ...POOL_OPTIONS,
            uri: proxyUri,
            proxyTls: connect,
            // http:// URLs are sent to the proxy as absolute-form requests, as curl does: many
            // proxies allow CONNECT to port 443 only. https:// URLs go through a CONNECT tunnel.
            proxyTunnel: false,
            factory: poolFailingFast,
          });
    byKey.set(key, dispatcher);
  }
  return dispatcher;
}

/**
 * A `lookup` for net/tls.connect that resolves with `resolve` and refuses the name unless every
 * address it has is allowed by `policy`. Both shapes are answered: with `autoSelectFamily` (the
 * default since Node 20) Node asks for `all: true`.
 */
export function vettedLookup(policy: AddressPolicy, resolve: ResolveHost): LookupFunction {
  return (hostname, options, callback) => {
    const answer = (error: Error | null, addresses: readonly LookupAddress[]) => {
      const [first] = addresses;
      if (error !== null || first === undefined) {
        const failure = error ?? Object.assign(new Error(`${hostname} has no addresses`), { code: "ENOTFOUND" });
        if (options.all === true) callback(failure as NodeJS.ErrnoException, []);
        else callback(failure as NodeJS.ErrnoException, "", 0);
      } else if (options.all === true) callback(null, [...addresses]);
      else callback(null, first.address, first.family);
    };
    resolve(hostname).then(
      (resolved) => {
        const category = firstRefusedCategory(resolved, policy);
        if (category !== undefined) {
          const message = `Refused to connect to ${hostname}: it resolves to ${describeCategory(category)}, ${refusalReason(category)}.`;
          answer(new DomainError("invalid", "FETCH_ADDRESS_REFUSED", message), []);
          return;
        }
        const family = familyOf(options.family);
        answer(
          null,
          resolved
            .filter((entry) => family === 0 || entry.family === family)
            .map(({ address, family: f }) => ({ address, family: f })),
        );
      },
      (error: unknown) => answer(error instanceof Error ? error : new Error(String(error)), []),
    );
  };
}

function familyOf(family: number | string | undefined): number {
  if (family === 4 || family === "IPv4") return 4;
  if (family === 6 || family === "IPv6") return 6;
  return 0;
}

/**
 * A pool whose connection attempts that break off fail the requests waiting for them. undici takes
 * a socket closed while connecting (UND_ERR_SOCKET) for a passing hiccup and connects again at once,
 * with no bound: a proxy that closes every CONNECT would be asked again and again, endlessly.
 */
function poolFailingFast(origin: string | URL, options: object): Dispatcher {
  const { connect } = options as { connect?: unknown };
  if (typeof connect !== "function") return new Pool(origin, options);
  const inner = connect as buildConnector.connector;
  const failingFast: buildConnector.connector = (connectOptions, callback) =>
    inner(connectOptions, (...args) => {
      const [error] = args;
      if (error === null) callback(...args);
      else if ((error as NodeJS.ErrnoException).code !== "UND_ERR_SOCKET") callback(error, null);
      else
        callback(
          Object.assign(new Error("the connection closed while it was being made"), { code: "ECONNRESET" }),
          null,
        );
    });
  return new Pool(origin, { ...options, connect: failingFast });
}
