import net from "node:net";
import { afterEach } from "vitest";
import { buildTestApp, type TestApp } from "./app.js";
import { createUpackFixtures } from "./upack-fixtures.js";

/**
 * A client connection a test holds open and writes to at its own pace (a slow, stuck or hostile
 * client), watching what the server answers and whether it closes the connection.
 */
export interface HeldSocket {
  readonly socket: net.Socket;
  /** Everything the server sent so far, as latin1 text. */
  received(): string;
  /** Resolves once the connection is closed, by the server or the test. */
  readonly closed: Promise<void>;
  isClosed(): boolean;
  /** Resolves once the server has sent something that matches (its answer's status line, say). */
  waitFor(pattern: RegExp): Promise<void>;
}

/** Connects to 127.0.0.1:`port` (from `localAddress`, another loopback address, to be another client). */
export function holdSocket(port: number, localAddress?: string): Promise<HeldSocket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1", ...(localAddress === undefined ? {} : { localAddress }) });
    let text = "";
    let closed = false;
    const waiters = new Set<() => void>();
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
      for (const waiter of waiters) waiter();
    });
    // A server that cuts a connection may reset it: that is an answer here, not a failure.
    socket.on("error", () => undefined);
    const closedPromise = new Promise<void>((done) =>
      socket.once("close", () => {
        closed = true;
        for (const waiter of waiters) waiter();
        done();
      }),
    );
    socket.once("connect", () =>
      resolve({
        socket,
        received: () => text,
        closed: closedPromise,
        isClosed: () => closed,
        waitFor: (pattern) =>
          new Promise((done, fail) => {
            const check = () => {
              if (pattern.test(text)) {
                waiters.delete(check);
                done();
              } else if (closed) {
                waiters.delete(check);
                fail(new Error(`closed without ${String(pattern)}; received: ${text.slice(0, 300)}`));
              }
            };
            waiters.add(check);
            check();
          }),
      }),
    );
    socket.once("error", reject);
  });
}

/** `promise`, or a failure naming `what` when it has not settled within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One GET on its own connection (`Connection: close`), optionally from another loopback address:
 * its status and body; status 0 when the connection was refused or closed without an answer.
 */
export async function getOnce(
  port: number,
  path: string,
  options: { headers?: Record<string, string>; localAddress?: string } = {},
): Promise<{ status: number; body: string }> {
  let held: HeldSocket;
  try {
    held = await holdSocket(port, options.localAddress);
  } catch {
    return { status: 0, body: "" };
  }
  const headers = Object.entries(options.headers ?? {})
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  held.socket.write(`GET ${path} HTTP/1.1\r\nHost: wharf\r\n${headers}Connection: close\r\n\r\n`);
  await held.closed;
  const text = held.received();
  const split = text.indexOf("\r\n\r\n");
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: split < 0 ? "" : text.slice(split + 4) };
}

/** A value of `wharf_http_connections_cut_total` in /metrics text. */
export function cutCount(metrics: string, reason: string): number {
  const line = new RegExp(`^wharf_http_connections_cut_total\\{reason="${reason}"\\} (\\d+)$`, "m").exec(metrics);
  return Number(line?.[1] ?? Number.NaN);
}

/** A test app with a universal feed `main`, listening on a free loopback port: for tests that need real sockets. */
export async function listeningWithFeed(env: Record<string, string> = {}): Promise<{ t: TestApp; port: number }> {
  const t = await buildTestApp({ env });
  await createUpackFixtures(t).createFeed("main");
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  const address = t.app.server.address();
  if (address === null || typeof address === "string") throw new Error("not listening on a port");
  return { t, port: address.port };
}

/**
 * `holdSocket` for the calling test file, with every socket it opened destroyed after each test.
 * Call it at the top level of the file (it registers an afterEach hook).
 */
export function socketsClosedAfterEach(): (port: number, localAddress?: string) => Promise<HeldSocket> {
  const held: HeldSocket[] = [];
  afterEach(() => {
    for (const socket of held.splice(0)) socket.socket.destroy();
  });
  return async (port, localAddress) => {
    const socket = await holdSocket(port, localAddress);
    held.push(socket);
    return socket;
  };
}
