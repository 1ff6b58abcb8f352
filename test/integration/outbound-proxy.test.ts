import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import tls from "node:tls";
import { text } from "node:stream/consumers";
import { afterEach, describe, expect, it } from "vitest";
import { type GuardedFetchOptions, type ResolveHost, createGuardedFetch } from "../../src/net/fetch-guard.js";
import { type TestProxy, startTestProxy } from "../helpers/http-proxy.js";
import { domainErrorOf } from "../helpers/responses.js";

// A real proxy and a real upstream, both on 127.0.0.1: names resolve through this table, never DNS.
const NAMES: Record<string, string[]> = {
  "app.test": ["127.0.0.1"],
  "proxy.test": ["127.0.0.1"],
  "internal.test": ["10.0.0.1"],
};
const resolve: ResolveHost = (hostname) =>
  Promise.resolve((NAMES[hostname] ?? []).map((address) => ({ address, family: 4 })));

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function upstream(): Promise<{ origin: string; port: number; requests: IncomingMessage[] }> {
  const requests: IncomingMessage[] = [];
  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(req);
    res.writeHead(200, { "content-type": "text/plain" }).end(`hello ${req.url ?? ""}`);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  closers.push(() => {
    server.closeAllConnections();
    return new Promise((done) => server.close(() => done()));
  });
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, port, requests };
}

async function proxy(): Promise<TestProxy> {
  const started = await startTestProxy();
  closers.push(() => started.close());
  return started;
}

// Loopback is allowed only where the test needs the proxy and upstream it started.
function guard(proxySettings: GuardedFetchOptions["proxy"], options: Partial<GuardedFetchOptions> = {}) {
  return createGuardedFetch({
    allowPrivate: false,
    allowLoopback: true,
    timeoutMs: 3000,
    maxBytes: 1024,
    maxRedirects: 2,
    resolve,
    ...(proxySettings === undefined ? {} : { proxy: proxySettings }),
    ...options,
  });
}

describe("outbound fetches through HTTP_PROXY / HTTPS_PROXY", () => {
  it("send an http:// request to HTTP_PROXY in absolute form, with the proxy's credentials only there", async () => {
    const server = await upstream();
    const relay = await proxy();
    const fetch = guard({ httpProxy: `http://wharf:s3cret@127.0.0.1:${relay.port}` });
    const response = await fetch(`http://app.test:${server.port}/one?x=1`, { headers: { authorization: "Basic up" } });
    expect(await text(response.body)).toBe("hello /one?x=1");
    expect(relay.requests).toEqual([`GET http://app.test:${server.port}/one?x=1`]);
    expect(relay.authorizations).toEqual([`Basic ${Buffer.from("wharf:s3cret").toString("base64")}`]);
    expect(server.requests[0]?.headers).toMatchObject({ host: `app.test:${server.port}`, authorization: "Basic up" });
    expect(server.requests[0]?.headers["proxy-authorization"]).toBeUndefined();
  });

  it("keep their connection to the proxy alive across requests", async () => {
    const server = await upstream();
    const relay = await proxy();
    for (const path of ["/a", "/b", "/c", "/d", "/e", "/f"]) {
      const response = await guard({ httpProxy: relay.url })(`${server.origin}${path}`);
      expect(await text(response.body)).toBe(`hello ${path}`);
    }
    expect(relay.requests).toHaveLength(6);
    expect(relay.connections).toBeLessThanOrEqual(2);
  });

  it("open a CONNECT tunnel for https:// URLs, through HTTPS_PROXY, keeping the name for TLS", async () => {
    const names: string[] = [];
    const server = tls.createServer({ SNICallback: (name, done) => (names.push(name), done(new Error("no cert"))) });
    server.on("tlsClientError", () => undefined);
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    closers.push(() => new Promise((done) => server.close(() => done())));
    const { port } = server.address() as AddressInfo;
    const relay = await proxy();
    const error = await domainErrorOf(guard({ httpsProxy: relay.url })(`https://app.test:${port}/`));
    expect(error).toMatchObject({ kind: "bad_gateway", code: "FETCH_FAILED" });
    expect(relay.requests).toEqual([`CONNECT app.test:${port}`]);
    expect(names).toEqual(["app.test"]);
  });

  it("use HTTP_PROXY for https:// URLs when HTTPS_PROXY is not set; HTTPS_PROXY alone leaves http:// direct", async () => {
    const server = await upstream();
    const relay = await proxy();
    const onlyHttps = guard({ httpsProxy: relay.url });
    expect(await text((await onlyHttps(`${server.origin}/direct`)).body)).toBe("hello /direct");
    expect(relay.requests).toEqual([]);
    expect(server.requests).toHaveLength(1);
    await domainErrorOf(guard({ httpProxy: relay.url })("https://app.test:1/"));
    expect(relay.requests).toEqual(["CONNECT app.test:1"]);
  });

  it("go direct for hosts NO_PROXY names: names, subdomains, ports, addresses, ranges and *", async () => {
    const server = await upstream();
    const relay = await proxy();
    const httpProxy = relay.url;
    const byName = `http://app.test:${server.port}/`;
    const bypassing: [noProxy: string, url: string][] = [
      ["127.0.0.1", `${server.origin}/`],
      ["10.0.0.0/8 127.0.0.0/8", `${server.origin}/`],
      [`app.test:${server.port}`, byName],
      [".test", byName],
      ["other.test, *.app.test,app.test", byName],
      ["*", byName],
    ];
    for (const [noProxy, url] of bypassing) {
      const response = await guard({ httpProxy, noProxy })(url);
      expect(await text(response.body)).toBe("hello /");
    }
    expect(relay.requests).toEqual([]);
    for (const noProxy of ["app.test:1", "other.test", "pp.test", "127.0.0.1"]) {
      const response = await guard({ httpProxy, noProxy })(`http://app.test:${server.port}/via`);
      expect(await text(response.body)).toBe("hello /via");
    }
    expect(relay.requests).toHaveLength(4);
  });
});

describe("the fetch guard through a proxy", () => {
  it("refuses a proxy on a loopback or private address unless they are allowed, sending it nothing", async () => {
    const server = await upstream();
    const relay = await proxy();
    const publicTarget: ResolveHost = (hostname) =>
      hostname === "public.test" ? Promise.resolve([{ address: "8.8.8.8", family: 4 }]) : resolve(hostname);
    const strict = { allowLoopback: false, resolve: publicTarget };
    const literal = await domainErrorOf(guard({ httpProxy: relay.url }, strict)("http://public.test/"));
    expect(literal).toMatchObject({ kind: "bad_gateway", code: "FETCH_PROXY_REFUSED" });
    expect(literal.message).toBe(
      "Refused to use the proxy 127.0.0.1 (HTTP_PROXY): it is a loopback address, which is not allowed unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true.",
    );
    const byName = await domainErrorOf(
      guard({ httpsProxy: `http://proxy.test:${relay.port}` }, strict)("https://public.test/"),
    );
    expect(byName.message).toBe(
      "Refused to use the proxy proxy.test (HTTPS_PROXY): it resolves to a loopback address, which is not allowed unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true.",
    );
    // proxy.test is loopback, allowed here; internal.test is private, which is not.
    const privateProxy = await domainErrorOf(guard({ httpProxy: `http://internal.test:${relay.port}` })(server.origin));
    expect(privateProxy.code).toBe("FETCH_PROXY_REFUSED");
    expect(relay.connections).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  it("still refuses a private, metadata or unknown target before anything reaches the proxy", async () => {
    const relay = await proxy();
    const fetch = guard({ httpProxy: relay.url, httpsProxy: relay.url });
    for (const url of [
      "http://10.0.0.1/",
      "http://internal.test/",
      "https://169.254.169.254/",
      "http://nowhere.test/",
    ]) {
      const error = await domainErrorOf(fetch(url));
      expect(error.code).toMatch(/^FETCH_(ADDRESS_REFUSED|HOST_NOT_FOUND)$/);
    }
    expect(relay.connections).toBe(0);
  });

  it("refuses a proxy name that resolves elsewhere by the time its connection is made", async () => {
    const relay = await proxy();
    let answers = 0;
    const rebinding: ResolveHost = (hostname) => {
      if (hostname !== "proxy.test") return resolve(hostname);
      answers++;
      return Promise.resolve([{ address: answers === 1 ? "127.0.0.1" : "10.0.0.1", family: 4 }]);
    };
    const fetch = guard({ httpProxy: `http://proxy.test:${relay.port}` }, { resolve: rebinding });
    const error = await domainErrorOf(fetch("http://app.test/"));
    expect(error).toMatchObject({ code: "FETCH_ADDRESS_REFUSED" });
    expect(error.message).toContain("Refused to connect to proxy.test: it resolves to a private address");
    expect(relay.connections).toBe(0);
  });

  it("checks every redirect's target again, through the proxy as without it", async () => {
    const server = http.createServer((req, res) => {
      if (req.url === "/final") res.end("final");
      else res.writeHead(302, { location: req.url === "/away" ? "http://internal.test/" : "/final" }).end();
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    closers.push(() => new Promise((done) => server.close(() => done())));
    const { port } = server.address() as AddressInfo;
    const relay = await proxy();
    const fetch = guard({ httpProxy: relay.url });
    expect(await text((await fetch(`http://app.test:${port}/start`)).body)).toBe("final");
    const error = await domainErrorOf(fetch(`http://app.test:${port}/away`));
    expect(error.message).toContain("Refused to follow a redirect to internal.test: it resolves to a private address");
    expect(relay.requests).toEqual([
      `GET http://app.test:${port}/start`,
      `GET http://app.test:${port}/final`,
      `GET http://app.test:${port}/away`,
    ]);
  });

  it("never shows the proxy's credentials in an error", async () => {
    const relay = await proxy();
    const fetch = guard({ httpProxy: `http://wharf:s3cret@internal.test:${relay.port}` });
    const error = await domainErrorOf(fetch("http://app.test/"));
    expect(error.message).toContain("internal.test");
    expect(error.message).not.toContain("s3cret");
    expect(error.message).not.toContain("wharf:");
  });
});
