import { randomBytes } from "node:crypto";
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import type { LightMyRequestResponse } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { expectText } from "../helpers/responses.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Every answer that refuses because of a server setting names the setting that would change it
 * (issue 12): an administrator reading a client's error knows what to look at. Others are checked
 * where their behaviour is: disk-full (WHARF_MIN_FREE_DISK_BYTES), archive-bounds
 * (WHARF_ARCHIVE_*), pre-auth-body (WHARF_PRE_AUTH_BODY_BYTES), connector-url-check and
 * outbound-proxy (WHARF_FETCH_ALLOW_PRIVATE), upack-content-url (WHARF_CONTENT_URL_UPLOADS).
 */

const apps: TestApp[] = [];
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((t) => t.close()));
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

async function app(env: Record<string, string>): Promise<TestApp> {
  const t = await buildTestApp({ env });
  apps.push(t);
  await createUpackFixtures(t).createFeed("main");
  return t;
}

function upload(t: TestApp, payload: Buffer | Readable | object, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: "PUT",
    url: "/upack/main/upload",
    headers: { "x-apikey": t.adminKey, ...headers },
    payload: payload as Buffer,
  });
}

function expectRefused(res: LightMyRequestResponse, status: number, code: string, setting: string): void {
  expectText(res, status, setting);
  expect(res.headers["x-wharf-error"]).toBe(code);
}

/** A server on loopback that answers every request with `body` after `delayMs`. */
async function serving(body: Buffer, delayMs = 0): Promise<string> {
  const server = http.createServer((_request, response) => {
    setTimeout(() => response.writeHead(200, { "content-type": "application/zip" }).end(body), delayMs);
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/pkg.upack`;
}

describe("refusals caused by a setting name it", () => {
  it("an upload over WHARF_MAX_UPLOAD_BYTES, declared, streamed or in base64", async () => {
    const t = await app({ WHARF_MAX_UPLOAD_BYTES: "1000" });
    const big = await buildUpack({
      name: "big",
      version: "1.0.0",
      files: { "a.bin": randomBytes(20_000).toString("base64") },
    });
    const declared = await upload(t, big, { "content-type": "application/zip" });
    expectRefused(declared, 413, "UPLOAD_TOO_LARGE", "limit of 1000 bytes (WHARF_MAX_UPLOAD_BYTES)");
    const streamed = await upload(t, Readable.from([big.subarray(0, 800), big.subarray(800)]), {
      "content-type": "application/zip",
      "transfer-encoding": "chunked",
    });
    expectRefused(streamed, 413, "UPLOAD_TOO_LARGE", "(WHARF_MAX_UPLOAD_BYTES)");
    const base64 = await t.app.inject({
      method: "POST",
      url: "/upack/main/upload",
      headers: { "x-apikey": t.adminKey },
      payload: { "content-b64": big.toString("base64") },
    });
    expectRefused(base64, 413, "UPLOAD_TOO_LARGE", "(WHARF_MAX_UPLOAD_BYTES)");
  });

  it("a content-url body over WHARF_FETCH_MAX_BYTES, or slower than WHARF_FETCH_TIMEOUT_MS", async () => {
    const body = await buildUpack({
      name: "far",
      version: "1.0.0",
      files: { "a.bin": randomBytes(5_000).toString("base64") },
    });
    const t = await app({
      WHARF_CONTENT_URL_UPLOADS: "true",
      WHARF_FETCH_ALLOW_PRIVATE: "true",
      WHARF_FETCH_MAX_BYTES: "1000",
      WHARF_FETCH_TIMEOUT_MS: "300",
    });
    const tooLarge = await upload(t, { "content-url": await serving(body) });
    expectRefused(tooLarge, 413, "FETCH_TOO_LARGE", "larger than 1000 bytes (WHARF_FETCH_MAX_BYTES)");
    const slow = await upload(t, { "content-url": await serving(body, 1_000) });
    expectRefused(slow, 504, "FETCH_TIMEOUT", "timed out after 300 ms (WHARF_FETCH_TIMEOUT_MS)");
  });

  it("a content-url to loopback without WHARF_FETCH_ALLOW_PRIVATE", async () => {
    const t = await app({ WHARF_CONTENT_URL_UPLOADS: "true" });
    const res = await upload(t, { "content-url": "http://127.0.0.1:9/pkg.upack" });
    expectRefused(res, 400, "FETCH_ADDRESS_REFUSED", "unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true");
  });
});
