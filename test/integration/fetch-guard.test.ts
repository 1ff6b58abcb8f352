import http, { type IncomingMessage, type ServerResponse } from "node:http";
import net, { type AddressInfo, type LookupFunction } from "node:net";
import tls from "node:tls";
import { text } from "node:stream/consumers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type GuardedFetchOptions, type ResolveHost, createGuardedFetch } from "../../src/net/fetch-guard.js";
import { domainErrorOf } from "../helpers/responses.js";

// Real sockets, 127.0.0.1 only. Names resolve through a table, never through DNS; addresses that
// must be refused are never connected to: the tripwire below fails any socket the guard would open
// to another address, so even a broken guard cannot send a packet to a metadata or private address.
const NAMES: Record<string, string[]> = {
  "app.test": ["127.0.0.1"],
  "evil.test": ["169.254.169.254"],
  "internal.test": ["10.0.0.1"],
  "mixed.test": ["127.0.0.1", "10.0.0.1"],
};
let resolverCalls: string[] = [];
const resolve: ResolveHost = (hostname) => {
  resolverCalls.push(hostname);
  const addresses = NAMES[hostname] ?? [];
  return Promise.resolve(addresses.map((address) => ({ address, family: 4 })));
};

const forbiddenConnects: string[] = [];
const realConnect = net.Socket.prototype.connect;
type ConnectOptions = { host?: string; lookup?: LookupFunction };
function tripwire(this: net.Socket, ...args: unknown[]): net.Socket {
  // net.createConnection passes its already normalised [options, callback] as the first argument.
  const first: unknown = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  if (typeof first === "object" && first !== null) {
    const options = first as ConnectOptions;
    const host = options.host ?? "localhost";
    const pinned = options.lookup;
    if (net.isIP(host) !== 0 && host !== "127.0.0.1") {
      forbiddenConnects.push(host);
      throw new Error(`tripwire: connect to ${host}`);
    }
    if (net.isIP(host) === 0) {
      if (pinned === undefined) throw new Error(`tripwire: unpinned lookup of ${host}`);
      options.lookup = (hostname, lookupOptions, callback) =>
        pinned(hostname, lookupOptions, (error, address, family) => {
          const addresses = Array.isArray(address) ? address.map((a) => a.address) : [address];
          const stray = addresses.filter((a) => a !== "127.0.0.1");
          if (error === null && stray.length > 0) {
            forbiddenConnects.push(...stray);
            callback(new Error(`tripwire: ${hostname} pinned to ${stray.join(", ")}`), address, family);
          } else callback(error, address, family);
        });
    }
  }
  return Reflect.apply(realConnect, this, args) as net.Socket;
}
beforeAll(() => {
  net.Socket.prototype.connect = tripwire as typeof realConnect;
});
afterAll(() => {
  net.Socket.prototype.connect = realConnect;
});
afterEach(() => {
  expect(forbiddenConnects).toEqual([]);
  resolverCalls = [];
});

interface TestServer {
  readonly port: number;
  readonly origin: string;
  readonly requests: IncomingMessage[];
  connections: number;
  close(): Promise<void>;
}
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function startServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  const server = http.createServer((req, res) => {
    state.requests.push(req);
    handler(req, res);
  });
  server.on("connection", () => state.connections++);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  const state: TestServer = {
    port,
    origin: `http://127.0.0.1:${port}`,
    requests: [],
    connections: 0,
    close: () => {
      server.closeAllConnections();
      return new Promise((done) => server.close(() => done()));
    },
  };
  servers.push(state);
  return state;
}

const hello = (_req: IncomingMessage, res: ServerResponse) => {
  res.writeHead(200, { "content-type": "text/plain", "x-test": "yes" }).end("hello");
};

/**
 * Every response body is read or discarded, as GuardedResponse.body asks: one left alone fails when
 * its deadline passes, after its test, in whatever file the worker runs next (test isolation is off).
 */
function guard(options: Partial<GuardedFetchOptions> = {}) {
  return createGuardedFetch({
    allowPrivate: false,
    allowLoopback: true,
    timeoutMs: 2000,
    maxBytes: 1024,
    maxRedirects: 3,
    resolve,
    ...options,
  });
}

describe("guarded fetch: address policy", () => {
  it("fetches from loopback when loopback is allowed, with its own Host, User-Agent and encoding", async () => {
    const server = await startServer(hello);
    const response = await guard()(`${server.origin}/file?x=1`, { headers: { "X-Extra": "1", Host: "spoofed" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-test")).toBe("yes");
    expect(response.url).toBe(`${server.origin}/file?x=1`);
    expect(await text(response.body)).toBe("hello");
    const seen = server.requests[0]?.headers;
    expect(seen).toMatchObject({ host: `127.0.0.1:${server.port}`, "x-extra": "1", "accept-encoding": "identity" });
    expect(seen?.["user-agent"]).toMatch(/^Wharf\//);
  });

  it("lets allowLoopback default to allowPrivate", async () => {
    const server = await startServer(hello);
    const fetch = createGuardedFetch({ allowPrivate: true, timeoutMs: 2000, maxBytes: 10, maxRedirects: 0 });
    const response = await fetch(`${server.origin}/`);
    expect(response.status).toBe(200);
    response.discard();
  });

  it.each([
    { allowPrivate: false, allowLoopback: false },
    { allowPrivate: true, allowLoopback: false },
    { allowPrivate: false, allowLoopback: undefined },
  ])("refuses loopback with %o before connecting", async (policy) => {
    const server = await startServer(hello);
    const error = await domainErrorOf(guard(policy)(`${server.origin}/`));
    expect(error).toMatchObject({ kind: "invalid", code: "FETCH_ADDRESS_REFUSED" });
    expect(error.message).toBe(
      "Refused to fetch from 127.0.0.1: it is a loopback address, which is not allowed unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true.",
    );
    expect(server.connections).toBe(0);
  });

  it("connects a name only to addresses vetted as the connection is made, keeping the name as Host", async () => {
    const server = await startServer(hello);
    const response = await guard()(`http://app.test:${server.port}/x`);
    expect(await text(response.body)).toBe("hello");
    expect(server.requests[0]?.headers.host).toBe(`app.test:${server.port}`);
    // Once to vet the URL, once more by the connection itself (outbound-dispatcher.ts).
    expect(resolverCalls).toEqual(["app.test", "app.test"]);
  });

  it("refuses a name that resolves elsewhere by the time the connection is made (DNS rebinding)", async () => {
    const server = await startServer(hello);
    let answers = 0;
    const rebinding: ResolveHost = () => {
      answers++;
      return Promise.resolve([{ address: answers === 1 ? "127.0.0.1" : "10.0.0.1", family: 4 }]);
    };
    const error = await domainErrorOf(guard({ resolve: rebinding })(`http://rebind.test:${server.port}/`));
    expect(error).toMatchObject({ kind: "invalid", code: "FETCH_ADDRESS_REFUSED" });
    expect(error.message).toBe(
      "Refused to connect to rebind.test: it resolves to a private address, which is not allowed unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true.",
    );
    expect(answers).toBe(2);
    expect(server.connections).toBe(0);
  });

  it("reuses kept-alive connections for sequential fetches of an origin, redirects included", async () => {
    const server = await startServer((req, res) => {
      if (req.url === "/moved") res.writeHead(302, { location: "/final" }).end("moved");
      else hello(req, res);
    });
    const paths = ["/a", "/b", "/moved", "/c", "/d", "/e", "/f", "/g"];
    for (const path of paths) {
      const response = await guard()(`${server.origin}${path}`);
      expect(await text(response.body)).toBe("hello");
    }
    expect(server.requests).toHaveLength(9);
    // undici's pool frees a connection a tick after its response ends, so a request sent at once
    // may open a second one; never one per request, as before (agent: false).
    expect(server.connections).toBeLessThanOrEqual(2);
    const discarded = await guard()(`${server.origin}/h`);
    discarded.discard();
    await new Promise((done) => setTimeout(done, 50));
    expect(await text((await guard()(`${server.origin}/i`)).body)).toBe("hello");
    expect(server.connections).toBeLessThanOrEqual(2);
  });

  it("sends a name as TLS SNI (and no SNI for a literal) while connecting to the vetted address", async () => {
    // No certificate needed: the handshake is refused right after the server reads the SNI.
    const names: string[] = [];
    const server = tls.createServer({ SNICallback: (name, done) => (names.push(name), done(new Error("no cert"))) });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const { port } = server.address() as AddressInfo;
    try {
      const error = await domainErrorOf(guard()(`https://app.test:${port}/`));
      expect(error).toMatchObject({ kind: "bad_gateway", code: "FETCH_FAILED" });
      await domainErrorOf(guard()(`https://127.0.0.1:${port}/`));
      expect(names).toEqual(["app.test"]);
    } finally {
      await new Promise((done) => server.close(done));
    }
  });

  it("refuses a name with a loopback and a private address, even though loopback is allowed", async () => {
    const server = await startServer(hello);
    const error = await domainErrorOf(guard()(`http://mixed.test:${server.port}/`));
    expect(error.code).toBe("FETCH_ADDRESS_REFUSED");
    expect(error.message).toContain("mixed.test: it resolves to a private address");
    expect(server.connections).toBe(0);
  });

  it.each(["ftp://127.0.0.1/", "file:///etc/passwd", "gopher://127.0.0.1:70/_x", "ws://127.0.0.1/"])(
    "refuses %s",
    async (url) => {
      expect(await domainErrorOf(guard()(url))).toMatchObject({ kind: "invalid", code: "FETCH_SCHEME_REFUSED" });
    },
  );

  it("refuses credentials in the URL", async () => {
    const server = await startServer(hello);
    const error = await domainErrorOf(guard()(`http://user:secret@127.0.0.1:${server.port}/`));
    expect(error.code).toBe("FETCH_CREDENTIALS_REFUSED");
    expect(error.message).not.toContain("secret");
    expect(server.connections).toBe(0);
  });
});

describe("guarded fetch: redirects", () => {
  function redirectingTo(location: (req: IncomingMessage) => string, status = 302) {
    return startServer((req, res) => {
      if (req.url === "/final") hello(req, res);
      else res.writeHead(status, { location: location(req) }).end("moved");
    });
  }

  it.each([301, 302, 303, 307, 308])("follows %i with a GET", async (status) => {
    const server = await redirectingTo(() => "/final", status);
    const response = await guard()(`${server.origin}/start`);
    response.discard();
    expect(response.status).toBe(200);
    expect(response.url).toBe(`${server.origin}/final`);
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual(["GET /start", "GET /final"]);
  });

  it.each([
    ["http://169.254.169.254/latest/meta-data/", "169.254.169.254: it is a cloud metadata address"],
    ["http://2852039166/", "169.254.169.254: it is a cloud metadata address"],
    ["http://[::ffff:169.254.169.254]/", "[::ffff:a9fe:a9fe]: it is a cloud metadata address"],
    ["http://evil.test/", "evil.test: it resolves to a cloud metadata address"],
    ["http://internal.test/", "internal.test: it resolves to a private address"],
    ["http://10.0.0.1/", "10.0.0.1: it is a private address"],
    ["http://0.0.0.0/", "0.0.0.0: it is an unspecified address"],
    ["http://metadata.google.internal/", "metadata.google.internal: it is a cloud metadata host"],
  ])("refuses a redirect to %s", async (location, reason) => {
    const server = await redirectingTo(() => location);
    const error = await domainErrorOf(guard()(`${server.origin}/start`));
    expect(error).toMatchObject({ kind: "invalid", code: "FETCH_ADDRESS_REFUSED" });
    expect(error.message).toContain(`Refused to follow a redirect to ${reason}`);
  });

  it("refuses a redirect to another scheme", async () => {
    const server = await redirectingTo(() => "file:///etc/passwd");
    expect(await domainErrorOf(guard()(`${server.origin}/`))).toMatchObject({ code: "FETCH_SCHEME_REFUSED" });
  });

  it("follows up to maxRedirects hops and fails on the next", async () => {
    const server = await startServer((req, res) => {
      const left = Number(req.url?.slice(1));
      if (left === 0) hello(req, res);
      else res.writeHead(302, { location: `/${left - 1}` }).end();
    });
    const response = await guard({ maxRedirects: 3 })(`${server.origin}/3`);
    response.discard();
    expect(response.url).toBe(`${server.origin}/0`);
    const error = await domainErrorOf(guard({ maxRedirects: 3 })(`${server.origin}/4`));
    expect(error).toMatchObject({ kind: "bad_gateway", code: "FETCH_TOO_MANY_REDIRECTS" });
    expect(server.requests.map((r) => r.url)).toEqual(["/3", "/2", "/1", "/0", "/4", "/3", "/2", "/1"]);
    const none = await domainErrorOf(guard({ maxRedirects: 0 })(`${server.origin}/1`));
    expect(none.code).toBe("FETCH_TOO_MANY_REDIRECTS");
  });

  it("drops credentials on a redirect to another origin and keeps them on the same origin", async () => {
    const other = await startServer(hello);
    const first = await startServer((req, res) => {
      if (req.url === "/same") res.writeHead(302, { location: "/final" }).end();
      else if (req.url === "/final") hello(req, res);
      else res.writeHead(302, { location: `${other.origin}/final` }).end();
    });
    const headers = { Authorization: "Bearer t", Cookie: "c=1", "X-ApiKey": "k", "X-Other": "o" };
    (await guard()(`${first.origin}/same`, { headers })).discard();
    expect(first.requests[1]?.headers).toMatchObject({ authorization: "Bearer t", cookie: "c=1", "x-apikey": "k" });
    (await guard()(`${first.origin}/away`, { headers })).discard();
    const seen = other.requests[0]?.headers;
    expect(seen?.["x-other"]).toBe("o");
    expect(seen?.authorization ?? seen?.cookie ?? seen?.["x-apikey"]).toBeUndefined();
  });

  it("returns a redirect status without Location as it is", async () => {
    const server = await startServer((_req, res) => res.writeHead(302).end("no location"));
    const response = await guard()(`${server.origin}/`);
    expect(response.status).toBe(302);
    expect(await text(response.body)).toBe("no location");
  });
});

describe("guarded fetch: time and size bounds", () => {
  it("times out on a server that never answers", async () => {
    const server = await startServer(() => undefined);
    const started = Date.now();
    const error = await domainErrorOf(guard({ timeoutMs: 300 })(`${server.origin}/`));
    expect(error).toMatchObject({ kind: "gateway_timeout", code: "FETCH_TIMEOUT" });
    expect(error.message).toBe("Fetching from 127.0.0.1 timed out after 300 ms.");
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("times out on a body that stalls after the headers", async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("partial");
    });
    const response = await guard({ timeoutMs: 300 })(`${server.origin}/`);
    const error = await domainErrorOf(text(response.body));
    expect(error.code).toBe("FETCH_TIMEOUT");
  });

  it("closes a body its caller never reads at the deadline, quietly (no error nobody would hear)", async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("partial");
    });
    const response = await guard({ timeoutMs: 200 })(`${server.origin}/`);
    await new Promise((done) => setTimeout(done, 400));
    expect(response.body.destroyed).toBe(true);
    expect(response.body.errored).toBeNull();
  });

  it("rejects with the caller's reason when the caller aborts", async () => {
    const server = await startServer(() => undefined);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(guard()(`${server.origin}/`, { signal: controller.signal })).rejects.toMatchObject({
      name: "AbortError",
    });
    await expect(guard()(`${server.origin}/`, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: "AbortError",
    });
  });

  it("refuses a declared Content-Length past maxBytes before reading", async () => {
    const server = await startServer((_req, res) => res.writeHead(200, { "content-length": "11" }).end("x".repeat(11)));
    const error = await domainErrorOf(guard({ maxBytes: 10 })(`${server.origin}/`));
    expect(error).toMatchObject({ kind: "too_large", code: "FETCH_TOO_LARGE" });
  });

  it("fails the body stream once an undeclared body passes maxBytes", async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200); // chunked: no Content-Length
      res.write("x".repeat(6));
      res.end("y".repeat(6));
    });
    const response = await guard({ maxBytes: 10 })(`${server.origin}/`);
    expect((await domainErrorOf(text(response.body))).code).toBe("FETCH_TOO_LARGE");
  });

  it("delivers a body of exactly maxBytes", async () => {
    const server = await startServer((_req, res) => res.end("x".repeat(10)));
    const response = await guard({ maxBytes: 10 })(`${server.origin}/`);
    expect(await text(response.body)).toBe("x".repeat(10));
  });

  it("fails the body when the connection closes before the declared length", async () => {
    const server = await startServer((req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("partial", () => req.socket.destroy());
    });
    const response = await guard()(`${server.origin}/`);
    expect(await domainErrorOf(text(response.body))).toMatchObject({ kind: "bad_gateway", code: "FETCH_FAILED" });
  });

  it("reports a refused connection as unavailable, naming the error code", async () => {
    const server = await startServer(hello);
    const { origin } = server;
    await server.close();
    const error = await domainErrorOf(guard()(`${origin}/`));
    expect(error).toMatchObject({ kind: "bad_gateway", code: "FETCH_FAILED" });
    expect(error.message).toBe("Fetching from 127.0.0.1 failed (ECONNREFUSED).");
  });
});
