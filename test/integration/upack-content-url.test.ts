import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { buildUpack, createUpackFixtures, sha1Hex } from "../helpers/upack-fixtures.js";
import { expectText } from "../helpers/responses.js";

/**
 * `content-url` uploads through the whole app (docs/compat.md 2.7; docs/PRODUCT.md security baseline):
 * refused until WHARF_CONTENT_URL_UPLOADS turns them on, and then fetched through the app's one
 * guarded fetch, so WHARF_FETCH_ALLOW_PRIVATE decides whether 127.0.0.1 is reachable and
 * link-local / metadata addresses never are. Nothing leaves 127.0.0.1: 169.254.169.254 is an IP
 * literal the guard refuses before connecting, also when a redirect names it.
 */

let origin: Server;
let base: string;
let bytes: Buffer;
let hits = 0;

beforeAll(async () => {
  bytes = await buildUpack({ name: "fetched", version: "1.0.0", files: { "x.txt": "x" } });
  origin = createServer((request, response) => {
    hits++;
    if (request.url === "/pkg.upack") response.writeHead(200).end(bytes);
    else if (request.url === "/to-metadata") {
      response.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end();
    } else response.writeHead(404).end("nope");
  });
  await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
});
afterAll(async () => new Promise((resolve) => origin.close(resolve)));

/** Runs `body` against a fresh app with a `main` feed, built from `env`. */
async function withApp(
  env: Record<string, string>,
  body: (upload: (url: string) => Promise<LightMyRequestResponse>, t: TestApp) => Promise<void>,
) {
  const t = await buildTestApp({ env });
  try {
    await createUpackFixtures(t).createFeed("main");
    const upload = (url: string) =>
      t.app.inject({
        method: "POST",
        url: "/upack/main/upload",
        headers: { "x-apikey": t.adminKey },
        payload: { "content-url": url },
      });
    await body(upload, t);
  } finally {
    await t.close();
  }
}

describe("content-url uploads", () => {
  it("are refused by default, saying that an administrator must enable them", async () => {
    await withApp({}, async (upload) => {
      hits = 0;
      expectText(await upload(`${base}/pkg.upack`), 400, "disabled", "an administrator must enable them");
      expect(hits).toBe(0);
    });
  });

  it("once enabled, still reach loopback only when private fetches are allowed", async () => {
    await withApp({ WHARF_CONTENT_URL_UPLOADS: "true" }, async (upload) => {
      hits = 0;
      expectText(await upload(`${base}/pkg.upack`), 400, "Refused to fetch from 127.0.0.1", "loopback");
      expect(hits).toBe(0);
    });
  });

  it("with both switches on, fetch the package and store it unchanged", async () => {
    await withApp({ WHARF_CONTENT_URL_UPLOADS: "yes", WHARF_FETCH_ALLOW_PRIVATE: "1" }, async (upload, t) => {
      const res = await upload(`${base}/pkg.upack`);
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json()).toMatchObject({ name: "fetched", version: "1.0.0", sha1: sha1Hex(bytes) });
      const download = await t.app.inject({
        url: "/upack/main/download/fetched/1.0.0",
        headers: { "x-apikey": t.adminKey },
      });
      expect(download.rawPayload.equals(bytes)).toBe(true);
      expectText(await upload(`${base}/missing`), 502, "HTTP 404");
    });
  });

  it("never fetch from a link-local metadata address, directly or through a redirect", async () => {
    await withApp({ WHARF_CONTENT_URL_UPLOADS: "true", WHARF_FETCH_ALLOW_PRIVATE: "true" }, async (upload) => {
      expectText(await upload("http://169.254.169.254/latest/meta-data/"), 400, "169.254.169.254", "never allowed");
      expectText(await upload(`${base}/to-metadata`), 400, "redirect to 169.254.169.254", "never allowed");
    });
  });

  it("are bounded by WHARF_FETCH_MAX_BYTES", async () => {
    const env = { WHARF_CONTENT_URL_UPLOADS: "true", WHARF_FETCH_ALLOW_PRIVATE: "true", WHARF_FETCH_MAX_BYTES: "100" };
    await withApp(env, async (upload) => {
      expectText(await upload(`${base}/pkg.upack`), 413, "larger than 100 bytes");
    });
  });
});
