import { promises as dns } from "node:dns";
import { isIP } from "node:net";
import { DomainError } from "../domain/errors.js";
import {
  type AddressCategory,
  type AddressPolicy,
  classifyAddress,
  describeCategory,
  isAlwaysRefused,
  isCategoryAllowed,
} from "./address-class.js";

/** One resolved address, as `dns.promises.lookup(host, { all: true })` returns them. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/** Resolves a host name to every address it has. Injectable so tests never touch real DNS. */
export type ResolveHost = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export const resolveWithSystemDns: ResolveHost = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/**
 * A URL whose host has been checked against the policy, with the one address the connection must
 * go to. Connecting anywhere else (e.g. by resolving the name again) would reopen DNS rebinding.
 */
export interface FetchTarget {
  readonly url: URL;
  /** The URL's host name without IPv6 brackets: what TLS verifies and SNI carries. */
  readonly hostname: string;
  readonly address: string;
  readonly family: 4 | 6;
}

/**
 * Names that reach a cloud metadata service without going through an address this module would
 * refuse anyway (or before the address is known). Compared lower-case without trailing dots.
 */
export const METADATA_HOSTNAMES: ReadonlySet<string> = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "metadata.azure.internal",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.packet.net",
  "metadata.platformequinix.com",
]);

/**
 * Which host is checked: hop 0 is the URL the caller gave, later hops come from `Location`
 * headers, a proxy hop is the proxy a fetch would go through (named by its variable), and
 * "connector" is a connector's URL as it is set, before anything is fetched from it.
 */
export type Hop = number | { readonly proxy: string } | "connector";

function subject(host: string, hop: Hop): string {
  if (hop === "connector") return `Refused a connector to ${host}`;
  if (typeof hop === "object") return `Refused to use the proxy ${host} (${hop.proxy})`;
  return hop === 0 ? `Refused to fetch from ${host}` : `Refused to follow a redirect to ${host}`;
}

/**
 * Parses and checks the parts of a URL that need no DNS: scheme and credentials. WHATWG parsing
 * already normalises every IPv4 spelling (`2852039166`, `0x7f.1`, `0177.0.0.1`, full-width digits)
 * to dotted decimal and IPv6 to its compressed form, so the later checks see one form only.
 *
 * Credentials in the URL are refused: they would travel to whatever host a redirect names, and
 * `http://trusted@evil/` is a classic disguise. Callers that need authentication send a header.
 */
export function parseFetchUrl(raw: string, base: URL | undefined, hop: number): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw hop === 0
      ? new DomainError("invalid", "FETCH_URL_INVALID", "The URL to fetch is not a valid absolute URL.")
      : new DomainError(
          "bad_gateway",
          "FETCH_BAD_REDIRECT",
          `${base?.hostname ?? "The server"} sent an invalid redirect.`,
        );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new DomainError(
      "invalid",
      "FETCH_SCHEME_REFUSED",
      hop === 0
        ? `Only http and https URLs can be fetched, not ${url.protocol}.`
        : `Refused to follow a redirect to a ${url.protocol} URL: only http and https are fetched.`,
    );
  }
  if (url.username !== "" || url.password !== "") {
    throw new DomainError(
      "invalid",
      "FETCH_CREDENTIALS_REFUSED",
      `${subject(url.hostname, hop)}: URLs with a user name or password are not fetched.`,
    );
  }
  return url;
}

/** The setting that opens private and loopback addresses, named in every refusal it could lift. */
export const ALLOW_PRIVATE_SETTING = "WHARF_FETCH_ALLOW_PRIVATE";

/** Why an address of this category is refused, naming the setting when one would change it. */
export function refusalReason(category: AddressCategory): string {
  return isAlwaysRefused(category)
    ? "which is never allowed"
    : `which is not allowed unless the server sets ${ALLOW_PRIVATE_SETTING}=true`;
}

function refused(host: string, hop: Hop, literal: boolean, category: AddressCategory): DomainError {
  const verb = literal ? "is" : "resolves to";
  return new DomainError(
    "invalid",
    "FETCH_ADDRESS_REFUSED",
    `${subject(host, hop)}: it ${verb} ${describeCategory(category)}, ${refusalReason(category)}.`,
  );
}

/**
 * The first address whose category the policy refuses, if any. One refused address refuses the
 * whole name (see vetFetchTarget).
 */
export function firstRefusedCategory(
  addresses: readonly ResolvedAddress[],
  policy: AddressPolicy,
): AddressCategory | undefined {
  for (const { address } of addresses) {
    const category = classifyAddress(address);
    if (!isCategoryAllowed(category, policy)) return category;
  }
  return undefined;
}

/** Rejects with the signal's reason as soon as it aborts, for work that cannot be cancelled (`dns.lookup`). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

async function resolveOrThrow(
  hostname: string,
  hop: Hop,
  resolve: ResolveHost,
  signal: AbortSignal | undefined,
): Promise<readonly ResolvedAddress[]> {
  try {
    return await untilAborted(resolve(hostname), signal);
  } catch (error) {
    if (signal?.aborted === true) throw signal.reason;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTFOUND" || code === "ENODATA") {
      const message = `${subject(hostname, hop)}: the host name could not be resolved.`;
      throw new DomainError("invalid", "FETCH_HOST_NOT_FOUND", message, { cause: error });
    }
    const message = `${subject(hostname, hop)}: the host name could not be resolved right now (${code ?? "error"}).`;
    throw new DomainError("bad_gateway", "FETCH_DNS_FAILED", message, { cause: error });
  }
}

/**
 * Resolves the URL's host (unless it is an IP literal), classifies every address, and picks the
 * one to connect to. One refused address refuses the whole name: a name with both a public and a
 * private address is either misconfigured or a rebinding attempt, and the resolver's order is not
 * ours to trust. Errors name the host and the kind of address, never the address itself, so that
 * the answer is no oracle of internal DNS beyond what a refusal already reveals.
 */
export async function vetFetchTarget(
  url: URL,
  hop: Hop,
  policy: AddressPolicy,
  resolve: ResolveHost,
  signal?: AbortSignal,
): Promise<FetchTarget> {
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const literalFamily = isIP(hostname);
  if (literalFamily === 0 && METADATA_HOSTNAMES.has(hostname.toLowerCase().replace(/\.+$/, ""))) {
    throw new DomainError(
      "invalid",
      "FETCH_ADDRESS_REFUSED",
      `${subject(url.hostname, hop)}: it is a cloud metadata host, which is never allowed.`,
    );
  }
  const addresses: readonly ResolvedAddress[] =
    literalFamily === 0
      ? await resolveOrThrow(hostname, hop, resolve, signal)
      : [{ address: hostname, family: literalFamily }];
  if (addresses.length === 0) {
    throw new DomainError(
      "invalid",
      "FETCH_HOST_NOT_FOUND",
      `${subject(url.hostname, hop)}: the host name has no addresses.`,
    );
  }
  const refusedCategory = firstRefusedCategory(addresses, policy);
  if (refusedCategory !== undefined) throw refused(url.hostname, hop, literalFamily !== 0, refusedCategory);
  // Classification accepted the first address as an IP literal, so its family is known for sure.
  const [first] = addresses as readonly [ResolvedAddress, ...ResolvedAddress[]];
  return { url, hostname, address: first.address, family: isIP(first.address) === 6 ? 6 : 4 };
}
