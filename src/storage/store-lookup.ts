import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { DomainError } from "../domain/errors.js";
import type { AddressPolicy } from "../net/address-class.js";
import { vettedLookup } from "../net/outbound-dispatcher.js";
import { createProxyRouter, type ProxySettings } from "../net/outbound-proxy.js";
import { type ResolveHost, resolveWithSystemDns } from "../net/fetch-target.js";

/**
 * Where an object store may be: on a private network or this machine (the common self-hosted
 * setup), never at a link-local or cloud metadata address. The endpoint's spelling is checked when
 * a feed is configured (areas/management/storage-endpoint.ts); a host name can still resolve to
 * such an address then or later (DNS rebinding), so every connection to a store is vetted again
 * as it is made, with the lookup every server-side fetch uses (net/outbound-dispatcher.ts).
 */
const STORE_ADDRESSES: AddressPolicy = { allowPrivate: true, allowLoopback: true };

export function objectStoreLookup(resolve: ResolveHost = resolveWithSystemDns): LookupFunction {
  return vettedLookup(STORE_ADDRESSES, resolve);
}

/**
 * An agent for a store reached through node:http (the Azure SDK's client), vetting each connection
 * the same way; `protocol` is the endpoint's ("https:" or "http:").
 */
export function objectStoreAgent(protocol: string, resolve?: ResolveHost): http.Agent {
  const options = { keepAlive: true, lookup: objectStoreLookup(resolve) };
  return protocol === "https:" ? new https.Agent(options) : new http.Agent(options);
}

/**
 * The proxy (its URI) that a store's requests to `url` go through, if any: the server's
 * HTTP_PROXY, HTTPS_PROXY and NO_PROXY (config.ts `outboundProxy`), as for every server-side
 * fetch. Through a proxy, the proxy resolves the store's name and connects to it.
 */
export function storeProxyRouter(settings: ProxySettings | undefined): (url: URL) => string | undefined {
  const route = createProxyRouter(settings);
  return (url) => route(url)?.uri;
}

/**
 * The refusal above as the object stores answer it: 502, as the store's setting is at fault, not
 * the request. It arrives as it was thrown (undici) or copied into the SDK's error (Azure's
 * RestError keeps its code and message). `prefix` says what was not done, and where.
 */
export function refusedStoreAddress(error: unknown, prefix: string): DomainError | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== "FETCH_ADDRESS_REFUSED" || typeof message !== "string") return undefined;
  return new DomainError("bad_gateway", "OBJECT_STORE_ADDRESS_REFUSED", `${prefix}: ${message}`);
}
