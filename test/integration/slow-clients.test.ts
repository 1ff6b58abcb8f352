import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApp } from "../helpers/app.js";
import {
  cutCount,
  getOnce,
  listeningWithFeed as listening,
  socketsClosedAfterEach,
  within,
} from "../helpers/held-socket.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * Slow and stuck clients over real sockets (issue 11, section 4): every phase of a connection has
 * a timeout, connections are bounded in total and per address, and what is cut is counted.
 * Timeouts are configured in tenths of a second; waits allow many times that, so a loaded
 * machine is slower, never wrong.
 */

const WAIT_MS = 10_000;

const uploadHead = (key: string, length: number) =>
  `PUT /upack/main/upload HTTP/1.1\r\nHost: wharf\r\nX-ApiKey: ${key}\r\n` +
  `Content-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`;

/** /metrics through inject: it takes no connection, so it counts for no bound. */
async function metricsOf(t: TestApp): Promise<string> {
  const res = await t.app.inject({ url: "/metrics", headers: { "X-ApiKey": t.adminKey } });
  expect(res.statusCode).toBe(200);
  return res.body;
}

function openCount(metrics: string, state: string): number {
  const line = new RegExp(`^wharf_http_connections_open\\{state="${state}"\\} (\\d+)$`, "m").exec(metrics);
  return Number(line?.[1] ?? Number.NaN);
}

/** Waits until the server counts `count` connections in `state` (authentication is asynchronous). */
async function untilOpen(t: TestApp, state: string, count: number): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (openCount(await metricsOf(t), state) !== count) {
    if (Date.now() > deadline) throw new Error(`never ${count} connections ${state}: ${await metricsOf(t)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const hold = socketsClosedAfterEach();

describe("timeouts per phase", () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    ({ t, port } = await listening({
      // Headers first: a connection that sends nothing is also idle, and the stall timeout would cut it without a 408.
      WHARF_HEADERS_TIMEOUT_SECONDS: "0.3",
      WHARF_STALL_TIMEOUT_SECONDS: "0.6",
      WHARF_KEEP_ALIVE_TIMEOUT_SECONDS: "0.2",
    }));
  });
  afterAll(async () => t?.close());

  it("a body that stops arriving is cut after the stall timeout, and counted", async () => {
    const before = cutCount(await metricsOf(t), "body_idle");
    const client = await hold(port);
    client.socket.write(`${uploadHead(t.adminKey, 100)}x`);
    await within(client.closed, WAIT_MS, "the stalled upload's connection closed");
    expect(client.received()).toBe("");
    expect(cutCount(await metricsOf(t), "body_idle")).toBe(before + 1);
  });

  it("headers that never finish, or never start, are answered 408 and the connection closed", async () => {
    const before = cutCount(await metricsOf(t), "header_timeout");
    const partial = await hold(port);
    partial.socket.write("GET /health HTTP/1.1\r\nHost: wharf\r\n");
    const silent = await hold(port);
    await within(Promise.all([partial.closed, silent.closed]), WAIT_MS, "both connections closed");
    expect(partial.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(cutCount(await metricsOf(t), "header_timeout")).toBe(before + 2);
  });

  it("an idle keep-alive connection is closed after the keep-alive timeout", async () => {
    const client = await hold(port);
    client.socket.write("GET /health HTTP/1.1\r\nHost: wharf\r\n\r\n");
    await client.waitFor(/^HTTP\/1\.1 200 [\s\S]*"serviceStatus":"OK"/);
    await within(client.closed, WAIT_MS, "the idle connection closed");
    expect(cutCount(await metricsOf(t), "keepalive")).toBeGreaterThanOrEqual(1);
  });
});

describe("a slow but progressing upload", () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    ({ t, port } = await listening({ WHARF_STALL_TIMEOUT_SECONDS: "1" }));
  });
  afterAll(async () => t?.close());

  it("is received whole, however long it takes, as long as bytes keep coming within the stall timeout", async () => {
    const bytes = await buildUpack({ name: "slow", version: "1.0.0", files: { "a.txt": "slowly".repeat(100) } });
    const client = await hold(port);
    client.socket.write(uploadHead(t.adminKey, bytes.length));
    const pieces = 25; // one every 100 ms: 2.5 s in all, more than twice the stall timeout
    const size = Math.ceil(bytes.length / pieces);
    for (let at = 0; at < bytes.length; at += size) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(client.isClosed()).toBe(false);
      client.socket.write(bytes.subarray(at, at + size));
    }
    await within(client.waitFor(/^HTTP\/1\.1 201 [\s\S]*"name":"slow"/), WAIT_MS, "the upload answered 201");
  });
});

describe("connections per address", () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    ({ t, port } = await listening({ WHARF_MAX_CONNECTIONS_PER_ADDRESS: "4", WHARF_STALL_TIMEOUT_SECONDS: "2" }));
  });
  afterAll(async () => t?.close());

  it("refuses the connection over the cap, serves other addresses meanwhile, and its own once the stalled ones are cut", async () => {
    const stalled = await Promise.all([1, 2, 3, 4].map(() => hold(port)));
    for (const client of stalled) client.socket.write(`${uploadHead(t.adminKey, 100)}x`);

    const refused = await hold(port);
    refused.socket.write("GET /health HTTP/1.1\r\nHost: wharf\r\n\r\n");
    await within(refused.closed, WAIT_MS, "the fifth connection closed");
    expect(refused.received()).toBe("");
    expect(stalled.some((client) => client.isClosed())).toBe(false);

    // Another client address is not affected.
    expect((await getOnce(port, "/health", { localAddress: "127.0.0.2" })).status).toBe(200);

    await within(Promise.all(stalled.map((client) => client.closed)), WAIT_MS, "the stalled uploads cut");
    expect((await getOnce(port, "/health")).status).toBe(200);
    const metrics = await metricsOf(t);
    expect(cutCount(metrics, "per_address_limit")).toBe(1);
    expect(cutCount(metrics, "body_idle")).toBe(4);
  });

  it("closes an idle keep-alive connection of that address to make room", async () => {
    const idle = await Promise.all([1, 2, 3, 4].map(() => hold(port)));
    for (const client of idle) client.socket.write("GET /health HTTP/1.1\r\nHost: wharf\r\n\r\n");
    await Promise.all(idle.map((client) => client.waitFor(/"serviceStatus":"OK"/)));
    const before = cutCount(await metricsOf(t), "shed_idle");

    expect((await getOnce(port, "/health")).status).toBe(200);
    expect(idle.filter((client) => client.isClosed()).length).toBeGreaterThanOrEqual(1);
    expect(cutCount(await metricsOf(t), "shed_idle")).toBe(before + 1);
  });
});

describe("connections in total", () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    ({ t, port } = await listening({ WHARF_MAX_CONNECTIONS: "4" }));
  });
  afterAll(async () => t?.close());

  it("sheds connections of unknown senders still waiting for headers, never authenticated uploads", async () => {
    const uploads = await Promise.all([1, 2].map(() => hold(port)));
    for (const client of uploads) client.socket.write(`${uploadHead(t.adminKey, 100)}x`);
    await untilOpen(t, "receiving", 2);
    const strangers = await Promise.all([1, 2].map(() => hold(port)));
    for (const client of strangers) client.socket.write("POST /upack/main/upload HTTP/1.1\r\n");

    // At the cap: /health is served in a stranger's place.
    expect((await getOnce(port, "/health")).status).toBe(200);
    await within(Promise.race(strangers.map((client) => client.closed)), WAIT_MS, "a stranger shed");
    expect(strangers.filter((client) => client.isClosed())).toHaveLength(1);
    expect(uploads.some((client) => client.isClosed())).toBe(false);

    // Two more uploads: the other stranger makes room for one. Then, full of authenticated
    // uploads with nothing to shed, a new connection is refused and the uploads go on.
    const more = await Promise.all([1, 2].map(() => hold(port)));
    for (const client of more) client.socket.write(`${uploadHead(t.adminKey, 100)}x`);
    await within(Promise.all(strangers.map((client) => client.closed)), WAIT_MS, "both strangers shed");
    await untilOpen(t, "receiving", 4);
    expect((await getOnce(port, "/health")).status).toBe(0);
    expect([...uploads, ...more].some((client) => client.isClosed())).toBe(false);

    const metrics = await metricsOf(t);
    expect(cutCount(metrics, "shed_anonymous")).toBe(2);
    expect(cutCount(metrics, "total_limit")).toBe(1);
  });
});
