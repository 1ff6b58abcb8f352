import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApp } from "../helpers/app.js";
import {
  cutCount,
  getOnce,
  listeningWithFeed as listening,
  socketsClosedAfterEach,
  within,
} from "../helpers/held-socket.js";
import { expectText } from "../helpers/responses.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * What a sender not yet known can make the server read, parse and hold (issue 11, section 2):
 * a JSON or form body, which may carry the key itself, is small, arrives in bounded time, and
 * shares a budget with every other such body; a larger one is refused unread. JSON is measured
 * before it is parsed, whoever sends it.
 */

const WAIT_MS = 10_000;
const MiB = 1024 * 1024;

const anonymousJsonHead = (url: string, length: number | "chunked") =>
  `POST ${url} HTTP/1.1\r\nHost: wharf\r\nContent-Type: application/json\r\n` +
  (length === "chunked" ? "Transfer-Encoding: chunked\r\n\r\n" : `Content-Length: ${length}\r\n\r\n`);

/** `{"k0":{},"k1":{},...}` of about `bytes` bytes, unterminated: the hostile body. */
function manyKeys(bytes: number): string {
  const parts: string[] = [];
  let size = 1;
  for (let i = 0; size < bytes; i++) {
    const part = `"k${i}":{},`;
    parts.push(part);
    size += part.length;
  }
  return `{${parts.join("")}`;
}

const hold = socketsClosedAfterEach();

describe("bodies before authentication", () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    ({ t, port } = await listening({ WHARF_PRE_AUTH_BODY_TIMEOUT_SECONDS: "0.5" }));
  });
  afterAll(async () => t?.close());

  const metrics = async () => (await t.app.inject({ url: "/metrics", headers: { "X-ApiKey": t.adminKey } })).body;

  it("an anonymous 5 MiB JSON upload is refused after its first kilobyte, unread, while /health answers", async () => {
    const client = await hold(port);
    client.socket.write(anonymousJsonHead("/upack/main/upload", 5 * MiB) + manyKeys(1024));
    expect((await getOnce(port, "/health")).status).toBe(200);
    await within(client.waitFor(/^HTTP\/1\.1 401 [\s\S]*X-ApiKey header/), WAIT_MS, "refused with 401");
    expect(client.received()).toMatch(/\r\nconnection: close\r\n/i);
    expect(client.received()).toMatch(/\r\nWWW-Authenticate: Basic/i);
    await within(client.closed, WAIT_MS, "its connection closed");
  });

  it("a chunked anonymous JSON body is refused once past the cap, without waiting for its end", async () => {
    const client = await hold(port);
    client.socket.write(anonymousJsonHead("/upack/main/upload", "chunked"));
    const chunk = manyKeys(16 * 1024);
    for (let i = 0; i < 5; i++) client.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    await within(client.waitFor(/^HTTP\/1\.1 401 /), WAIT_MS, "refused with 401");
    await within(client.closed, WAIT_MS, "its connection closed");
  });

  it("on a route Anonymous may call, a large anonymous JSON body is a 413 that says how to send more", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/json/Applications_GetApplications",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ Application_Count: 1, _pad: "x".repeat(100 * 1024) }),
    });
    expectText(res, 413, "at most 65536 bytes of JSON or form body (WHARF_PRE_AUTH_BODY_BYTES)", "X-ApiKey header");
    expect(res.headers["x-wharf-error"]).toBe("PRE_AUTH_BODY_TOO_LARGE");
  });

  it("a key inside a small JSON body still authenticates; inside a body over the cap it is not looked for", async () => {
    const small = await buildUpack({ name: "keyed", version: "1.0.0", files: { "a.txt": "A" } });
    const upload = (bytes: Buffer) =>
      t.app.inject({
        method: "POST",
        url: "/upack/main/upload",
        payload: { API_Key: t.adminKey, "content-b64": bytes.toString("base64") },
      });
    expect((await upload(small)).statusCode).toBe(201);
    const large = await buildUpack({ name: "keyed", version: "2.0.0", files: { "a.bin": randomBytes(100 * 1024) } });
    expectText(await upload(large), 401, "X-ApiKey header");
  });

  it("with the key in a header, a JSON upload of about 500 KB is accepted", async () => {
    const bytes = await buildUpack({ name: "big-json", version: "1.0.0", files: { "a.bin": randomBytes(370 * 1024) } });
    const payload = JSON.stringify({ "content-b64": bytes.toString("base64") });
    expect(payload.length).toBeGreaterThan(480 * 1024);
    const res = await t.app.inject({
      method: "POST",
      url: "/upack/main/upload",
      headers: { "x-apikey": t.adminKey, "content-type": "application/json" },
      payload,
    });
    expect(res.statusCode, res.body).toBe(201);
  });

  it("JSON nested too deeply, or holding too many values, is refused before it is parsed, whoever sends it", async () => {
    const send = (payload: string, headers: Record<string, string> = {}) =>
      t.app.inject({
        method: "POST",
        url: "/upack/main/upload",
        headers: { "content-type": "application/json", ...headers },
        payload,
      });
    const admin = { "x-apikey": t.adminKey };
    const deep = `{"name":"deep","version":"1.0.0","_x":${"[".repeat(65)}${"]".repeat(65)}}`;
    for (const headers of [admin, {}]) {
      const res = await send(deep, headers);
      expectText(res, 400, "nested more than 64 levels");
      expect(res.headers["x-wharf-error"]).toBe("JSON_TOO_DEEP");
    }
    const many = `{${Array.from({ length: 25_000 }, (_, i) => `"k${i}":0`).join(",")}}`;
    const res = await send(many, admin);
    expectText(res, 413, "more than 20000 values");
    expect(res.headers["x-wharf-error"]).toBe("JSON_TOO_MANY_VALUES");
    // 20,000 values in one body are still parsed (and then judged by the route).
    const fine = `{"name":"wide","version":"1.0.0",${Array.from({ length: 19_000 }, (_, i) => `"_k${i}":0`).join(",")}}`;
    expect((await send(fine, admin)).headers["x-wharf-error"]).not.toMatch(/^JSON_TOO/);
  });

  it("a body that may carry the key must arrive whole in time, however it trickles in", async () => {
    const before = cutCount(await metrics(), "pre_auth_body_timeout");
    const client = await hold(port);
    client.socket.write(anonymousJsonHead("/upack/main/upload", 200));
    const trickle = setInterval(() => client.socket.write("{"), 100);
    try {
      await within(client.closed, WAIT_MS, "the trickling body's connection closed");
    } finally {
      clearInterval(trickle);
    }
    expect(cutCount(await metrics(), "pre_auth_body_timeout")).toBe(before + 1);
  });
});

describe("the budget all strangers' bodies share", () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    ({ t, port } = await listening({
      WHARF_PRE_AUTH_BODY_BYTES: "1024",
      WHARF_MAX_CONNECTIONS_PER_ADDRESS: "1000",
      WHARF_MAX_CONNECTIONS: "1000",
    }));
  });
  afterAll(async () => t?.close());

  const heldBytes = async () =>
    Number(
      /^wharf_http_pre_auth_body_bytes (\d+)$/m.exec(
        (await t.app.inject({ url: "/metrics", headers: { "X-ApiKey": t.adminKey } })).body,
      )?.[1],
    );

  it("is 256 bodies of the largest size: past it, 503 with Retry-After, and room again once they end", async () => {
    const senders = await Promise.all(Array.from({ length: 256 }, () => hold(port)));
    for (const sender of senders) sender.socket.write(anonymousJsonHead("/upack/main/upload", 1024));
    const deadline = Date.now() + WAIT_MS;
    while ((await heldBytes()) < 256 * 1024 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await heldBytes()).toBe(256 * 1024);

    const late = await hold(port);
    late.socket.write(anonymousJsonHead("/upack/main/upload", 1024));
    await within(late.waitFor(/^HTTP\/1\.1 503 [\s\S]*\r\n\r\n./), WAIT_MS, "refused with 503");
    expect(late.received()).toMatch(/\r\nRetry-After: 1\r\n/i);
    expect(late.received()).toContain("PRE_AUTH_BODIES_BUSY");

    const first = senders[0];
    if (first === undefined) throw new Error("no sender");
    first.socket.destroy();
    while ((await heldBytes()) > 255 * 1024 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const next = await hold(port);
    next.socket.write(`${anonymousJsonHead("/upack/main/upload", 2)}{}`);
    await within(next.waitFor(/^HTTP\/1\.1 401 /), WAIT_MS, "an ordinary 401 again");
  });
});
