import { isIP } from "node:net";
import { addressListMatcher } from "./address-list.js";

/**
 * The proxies server-side fetches go through, as HTTP_PROXY, HTTPS_PROXY and NO_PROXY (or their
 * lower-case spellings) set them; config.ts reads and checks them. Absent: fetches connect directly.
 */
export interface ProxySettings {
  /** The proxy for http:// URLs (HTTP_PROXY), an absolute http(s) URL. */
  readonly httpProxy?: string;
  /** The proxy for https:// URLs (HTTPS_PROXY); HTTP_PROXY when unset, as undici and most tools do. */
  readonly httpsProxy?: string;
  /**
   * Hosts reached directly (NO_PROXY): comma- or space-separated names (a name covers its
   * subdomains; a leading `.` or `*.` is ignored), optionally with `:port`, IP addresses, CIDR
   * ranges, or `*` for every host.
   */
  readonly noProxy?: string;
}

/** The proxy one request goes through, and the variable that named it (for messages). */
export interface ProxyRoute {
  readonly uri: string;
  readonly variable: "HTTP_PROXY" | "HTTPS_PROXY";
}

interface NoProxyRule {
  readonly host: string;
  readonly port: number | undefined;
}

/** Decides, per URL, whether a fetch goes through a proxy and which one. */
export type ProxyRouter = (url: URL) => ProxyRoute | undefined;

const DEFAULT_PORTS: Record<string, number> = { "http:": 80, "https:": 443 };

/**
 * NO_PROXY as undici's EnvHttpProxyAgent and curl read it (names, subdomains, ports, `*`), plus CIDR
 * ranges as curl 7.86+ reads them, common in container platforms (`10.0.0.0/8`).
 */
export function createProxyRouter(settings: ProxySettings | undefined): ProxyRouter {
  const http = settings?.httpProxy;
  const https = settings?.httpsProxy;
  if (http === undefined && https === undefined) return () => undefined;
  const entries = (settings?.noProxy ?? "").split(/[,\s]+/).filter((entry) => entry !== "");
  if (entries.includes("*")) return () => undefined;
  const ranges = addressListMatcher(entries.map(unbracketed).filter(isAddressRange));
  const rules = entries.filter((entry) => !isAddressRange(entry)).map(parseRule);

  const bypassed = (url: URL): boolean => {
    const host = url.hostname
      .replace(/^\[|\]$/g, "")
      .toLowerCase()
      .replace(/\.+$/, "");
    const port = url.port === "" ? DEFAULT_PORTS[url.protocol] : Number(url.port);
    if (isIP(host) !== 0 && ranges(host)) return true;
    return rules.some(
      (rule) =>
        (rule.port === undefined || rule.port === port) && (host === rule.host || host.endsWith(`.${rule.host}`)),
    );
  };

  return (url) => {
    if (bypassed(url)) return undefined;
    if (url.protocol === "https:" && https !== undefined) return { uri: https, variable: "HTTPS_PROXY" };
    return http === undefined ? undefined : { uri: http, variable: "HTTP_PROXY" };
  };
}

const unbracketed = (entry: string) => entry.replace(/^\[|\]$/g, "");

/** An address or a CIDR range (`10.0.0.0/8`, `::1`); anything else is a name rule. */
function isAddressRange(entry: string): boolean {
  const [address = "", prefix, extra] = unbracketed(entry).split("/");
  const family = isIP(address);
  if (extra !== undefined || family === 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

function parseRule(entry: string): NoProxyRule {
  const withPort = /^(.+):(\d+)$/.exec(entry);
  const host = (withPort?.[1] ?? entry).replace(/^\[|\]$/g, "");
  return {
    host: host
      .replace(/^\*?\./, "")
      .toLowerCase()
      .replace(/\.+$/, ""),
    port: withPort?.[2] === undefined ? undefined : Number(withPort[2]),
  };
}

/** A proxy as messages show it: scheme, host and port, never its credentials. */
export function describeProxy(uri: string): string {
  const url = new URL(uri);
  return url.host;
}

/** What config.ts makes of the proxy variables: the settings, or what is wrong with them. */
export interface ProxyEnvironment {
  readonly settings: ProxySettings | undefined;
  /** `HTTP_PROXY: ...` lines for the configuration error; never the value (it may hold a password). */
  readonly problems: readonly string[];
}

const PROXY_URL_FORMAT = "must be an http:// or https:// URL of a proxy (e.g. http://proxy.example.com:3128)";

/**
 * Reads HTTP_PROXY, HTTPS_PROXY and NO_PROXY from the environment config.ts is given. The
 * lower-case spelling wins when both are set, as in curl and undici; a proxy without a scheme
 * (`proxy:3128`) is http://, as curl takes it. An empty variable counts as unset.
 */
export function proxyEnvironment(env: NodeJS.ProcessEnv): ProxyEnvironment {
  const read = (name: string) =>
    [env[name.toLowerCase()], env[name]].find((value) => value !== undefined && value !== "");
  const problems: string[] = [];
  const proxyUrl = (name: "HTTP_PROXY" | "HTTPS_PROXY"): string | undefined => {
    const raw = read(name)?.trim();
    if (raw === undefined) return undefined;
    const withScheme = /^[a-z][a-z\d+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
    let url: URL | undefined;
    try {
      url = new URL(withScheme);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
      problems.push(`${name}: ${PROXY_URL_FORMAT}`);
      return undefined;
    }
    return url.href;
  };
  const httpProxy = proxyUrl("HTTP_PROXY");
  const httpsProxy = proxyUrl("HTTPS_PROXY");
  const noProxy = read("NO_PROXY");
  if (httpProxy === undefined && httpsProxy === undefined) return { settings: undefined, problems };
  return {
    settings: Object.freeze({
      ...(httpProxy === undefined ? {} : { httpProxy }),
      ...(httpsProxy === undefined ? {} : { httpsProxy }),
      ...(noProxy === undefined ? {} : { noProxy }),
    }),
    problems,
  };
}
