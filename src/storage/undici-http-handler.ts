import type { LookupFunction } from "node:net";
import type { Readable } from "node:stream";
import { Agent, type Dispatcher, ProxyAgent, errors as undiciErrors } from "undici";

/**
 * The AWS SDK's HTTP layer on undici instead of node:http (`requestHandler` of S3Client): the SDK
 * still builds, signs, retries and parses every request; undici only carries it.
 *
 * Why: a package download from the S3 store is a proxy (the store's answer streamed on to the
 * client), and on a busy 2-core machine the server's CPU per byte decides its speed. With undici
 * the server spends 0.27-0.31 s of CPU on a 100 MiB download instead of 0.34 s, and the store's
 * put of 100 MiB went from 0.65x to 0.66-0.72x a plain PutObject (bench/object-store.ts). The
 * SDK's `Expect: 100-continue` is dropped, as undici does not send it: node:http opened a fresh
 * connection for every such request and waited a round trip for the server's 100 before the
 * body; a refused request now costs its body's upload.
 */

/** The part of the SDK's HttpRequest (@smithy/protocol-http) a handler reads. */
interface SdkRequest {
  readonly method: string;
  readonly protocol: string;
  readonly hostname: string;
  readonly port?: number;
  readonly path: string;
  readonly query?: Record<string, string | readonly string[] | null>;
  readonly headers: Record<string, string>;
  readonly body?: unknown;
}

/** The part of the SDK's HttpResponse it reads (checked by shape, not by class). */
interface SdkResponse {
  readonly statusCode: number;
  readonly reason?: string;
  readonly headers: Record<string, string>;
  readonly body: Readable;
}

interface SdkAbortSignal {
  readonly aborted: boolean;
  addEventListener?: AbortSignal["addEventListener"];
}

export class UndiciHttpHandler {
  readonly metadata = { handlerProtocol: "http/1.1" };
  /** undici's defaults: connections kept while the server allows, 300 s for an answer to start or go on. */
  private readonly direct: Agent;
  /** By proxy URI, made on first use. */
  private readonly proxied = new Map<string, ProxyAgent>();
  /** By origin: a store talks to one or two, and routing each request again would be waste. */
  private readonly routes = new Map<string, Dispatcher>();

  /**
   * `lookup` resolves (and may refuse) the host name of every new connection: the store's, or a
   * proxy's. `proxyFor` names the proxy a request goes through, if any (storage/store-lookup.ts).
   */
  constructor(
    private readonly options: {
      readonly lookup?: LookupFunction;
      readonly proxyFor?: (url: URL) => string | undefined;
    } = {},
  ) {
    this.direct = new Agent(options.lookup ? { connect: { lookup: options.lookup } } : {});
  }

  private dispatcherFor(origin: string): Dispatcher {
    let dispatcher = this.routes.get(origin);
    if (dispatcher === undefined) {
      const proxy = this.options.proxyFor?.(new URL(origin));
      dispatcher = proxy === undefined ? this.direct : this.proxyAgent(proxy);
      this.routes.set(origin, dispatcher);
    }
    return dispatcher;
  }

  private proxyAgent(uri: string): ProxyAgent {
    let agent = this.proxied.get(uri);
    if (agent === undefined) {
      // http:// requests go to the proxy in absolute form, as curl sends them; https:// ones
      // through a CONNECT tunnel (net/outbound-dispatcher.ts does the same for fetches).
      const lookup = this.options.lookup;
      agent = new ProxyAgent({ uri, proxyTunnel: false, ...(lookup ? { proxyTls: { lookup } } : {}) });
      this.proxied.set(uri, agent);
    }
    return agent;
  }

  async handle(
    sdkRequest: SdkRequest,
    { abortSignal }: { abortSignal?: SdkAbortSignal } = {},
  ): Promise<{ response: SdkResponse }> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(sdkRequest.headers)) {
      if (name.toLowerCase() !== "expect") headers[name] = value;
    }
    const host =
      sdkRequest.hostname.includes(":") && !sdkRequest.hostname.startsWith("[")
        ? `[${sdkRequest.hostname}]`
        : sdkRequest.hostname;
    const origin = `${sdkRequest.protocol}//${host}${sdkRequest.port ? `:${sdkRequest.port}` : ""}`;
    const query = queryString(sdkRequest.query);
    try {
      // The dispatcher's own call, not undici.request(url): a URL would be parsed and its path
      // normalised ("a/../b"), and then it would no longer be the path the signature covers.
      const answer = await this.dispatcherFor(origin).request({
        origin,
        method: sdkRequest.method as "GET",
        path: query ? `${sdkRequest.path}?${query}` : sdkRequest.path,
        headers,
        body: sdkRequest.body as Readable | Uint8Array | string | undefined,
        // undici takes any object with addEventListener and `aborted`, as the SDK's own signal has.
        ...(abortSignal ? { signal: abortSignal as AbortSignal } : {}),
      });
      const responseHeaders: Record<string, string> = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(", ") : value;
      }
      return { response: { statusCode: answer.statusCode, headers: responseHeaders, body: answer.body } };
    } catch (error) {
      throw asNodeNetworkError(error);
    }
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  destroy(): void {
    for (const dispatcher of [this.direct, ...this.proxied.values()]) void dispatcher.destroy();
  }
}

/**
 * The query string as the SDK's own handler writes it (RFC 3986: everything but unreserved
 * characters escaped), so the URL sent is the one the signature covers.
 */
function queryString(query: SdkRequest["query"]): string {
  const parts: string[] = [];
  for (const key of Object.keys(query ?? {}).sort()) {
    const value = query?.[key];
    if (value === null || value === undefined) parts.push(escape(key));
    else for (const each of typeof value === "string" ? [value] : value) parts.push(`${escape(key)}=${escape(each)}`);
  }
  return parts.join("&");
}

const escape = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * undici's names for a connection that failed or a store that went quiet, as node:http's: the
 * SDK retries ECONNRESET and TimeoutError, and s3-errors.ts reads them as "the store did not answer".
 */
function asNodeNetworkError(error: unknown): unknown {
  if (error instanceof undiciErrors.SocketError)
    return Object.assign(new Error(error.message, { cause: error }), { code: "ECONNRESET" });
  if (
    error instanceof undiciErrors.ConnectTimeoutError ||
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError
  ) {
    return Object.assign(new Error(error.message, { cause: error }), { name: "TimeoutError", code: "ETIMEDOUT" });
  }
  return error;
}
