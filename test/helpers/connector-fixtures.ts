/**
 * Fixtures for feeds with connectors: an upstream Wharf (a second app on a real socket, serving a
 * real universal feed), a fake upstream (a bare HTTP server the test scripts, counting what it
 * is asked), and the downstream app with a connector and a feed naming it, created through the
 * management API as an administrator would.
 *
 * Typical use:
 *   const up = await startUpstreamWharf();
 *   await up.upack.addVersion("remote", { name: "tool", version: "1.0.0" });
 *   const down = await startDownstream({ connector: { name: "up", url: up.feedUrl, ...up.credentials } });
 *   await down.get("/upack/proxy/packages");
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import type { Clock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "./app.js";
import { createFeedKey } from "./fixtures.js";
import { createUpackFixtures, type UpackFixtures } from "./upack-fixtures.js";

export const ALLOW_PRIVATE = { WHARF_FETCH_ALLOW_PRIVATE: "true" };

export interface UpstreamWharf {
  readonly t: TestApp;
  readonly upack: UpackFixtures;
  /** `http://127.0.0.1:<port>/upack/remote`: what a connector's url is. */
  readonly feedUrl: string;
  /** Basic credentials of a view/download key of the feed (anonymous callers get nothing). */
  readonly credentials: { username: string; password: string };
  /** Stops listening (the app stays, so its data can still be read). */
  stop(): Promise<void>;
  close(): Promise<void>;
}

/** A Wharf with a universal feed `remote`, listening on 127.0.0.1 at a free port. */
export async function startUpstreamWharf(): Promise<UpstreamWharf> {
  const t = await buildTestApp();
  const upack = createUpackFixtures(t);
  await upack.createFeed("remote");
  const key = await createFeedKey(t.database, "remote", ["view"]);
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = t.app.server.address() as AddressInfo;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await new Promise<void>((resolve) => {
      t.app.server.close(() => resolve());
      t.app.server.closeAllConnections();
    });
  };
  return {
    t,
    upack,
    feedUrl: `http://127.0.0.1:${port}/upack/remote`,
    credentials: { username: "api", password: key },
    stop,
    async close() {
      await stop();
      await t.close();
    },
  };
}

export interface SeenRequest {
  readonly path: string;
  readonly authorization: string | undefined;
}

export interface FakeUpstream {
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  readonly requests: SeenRequest[];
  /** What answers each request; replace it to change the upstream's behaviour mid-test. */
  handle: (request: IncomingMessage, response: ServerResponse) => void;
  close(): Promise<void>;
}

/** A bare HTTP server recording every request, answering through `handle` (404 until set). */
export async function startFakeUpstream(
  handle: FakeUpstream["handle"] = (_req, res) => void res.writeHead(404).end(),
): Promise<FakeUpstream> {
  const requests: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  const fake: FakeUpstream = {
    base: "",
    requests,
    handle,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((request, response) => {
    requests.push({ path: request.url ?? "", authorization: request.headers.authorization });
    fake.handle(request, response);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  (fake as { base: string }).base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
}

export interface DownstreamOptions {
  readonly env?: Record<string, string>;
  readonly clock?: Clock;
  /** Connectors to create (POST /api/management/connectors/create bodies). */
  readonly connectors: readonly Record<string, unknown>[];
  /** Feeds to create: name -> settings (connectors default to every connector above, cacheConnectors to true). */
  readonly feeds?: Readonly<Record<string, Record<string, unknown>>>;
}

export interface Downstream {
  readonly t: TestApp;
  readonly upack: UpackFixtures;
  /** GET (or HEAD) with the admin key unless other headers are given. */
  get(url: string, headers?: Record<string, string>, method?: "GET" | "HEAD"): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** The app under test: WHARF_FETCH_ALLOW_PRIVATE=true unless `env` says otherwise, feed `proxy` by default. */
export async function startDownstream(options: DownstreamOptions): Promise<Downstream> {
  const t = await buildTestApp({
    env: { ...ALLOW_PRIVATE, ...options.env },
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const admin = { "x-apikey": t.adminKey };
  for (const connector of options.connectors) {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/management/connectors/create",
      headers: admin,
      payload: { feedType: "universal", ...connector },
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  const names = options.connectors.map((connector) => String(connector.name));
  for (const [name, settings] of Object.entries(options.feeds ?? { proxy: {} })) {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: admin,
      payload: { name, feedType: "universal", connectors: names, cacheConnectors: true, ...settings },
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  return {
    t,
    upack: createUpackFixtures(t),
    get: (url, headers = admin, method = "GET") => t.app.inject({ method, url, headers }),
    close: () => t.close(),
  };
}

/** The JSON body of a 200. */
export function okJson<T = unknown>(res: LightMyRequestResponse): T {
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
  return res.json<T>();
}

/** A plain-text error with this status, whose message contains every fragment. */
export function expectError(res: LightMyRequestResponse, status: number, ...fragments: string[]): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers["content-type"]).toBe("text/plain");
  for (const fragment of fragments) expect(res.body).toContain(fragment);
}

/** A clock the test moves forward. */
export function movableClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance(ms) {
      offset += ms;
    },
  };
}
