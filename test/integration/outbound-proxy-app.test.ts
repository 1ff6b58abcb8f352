import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import {
  type FakeUpstream,
  okJson,
  sendJson,
  startDownstream,
  startFakeUpstream,
} from "../helpers/connector-fixtures.js";
import { buildTestApp } from "../helpers/app.js";
import { startAzurite } from "../helpers/azurite.js";
import { type TestProxy, startTestProxy } from "../helpers/http-proxy.js";
import { azuriteStoreServer } from "../helpers/object-store-feeds.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

// Wharf as configured by the environment: HTTP_PROXY and NO_PROXY reach every server-side fetch.
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function upstreamAndProxy(): Promise<{ fake: FakeUpstream; relay: TestProxy }> {
  const fake = await startFakeUpstream((_request, response) => sendJson(response, 200, []));
  const relay = await startTestProxy();
  closers.push(
    () => fake.close(),
    () => relay.close(),
  );
  return { fake, relay };
}

describe("server-side fetches and the proxy variables", () => {
  it("send a connector's requests through HTTP_PROXY, over kept-alive proxy connections", async () => {
    const { fake, relay } = await upstreamAndProxy();
    const down = await startDownstream({
      env: { HTTP_PROXY: relay.url },
      connectors: [{ name: "up", url: `${fake.base}/upack/feed`, metadataCacheEnabled: false }],
    });
    closers.push(() => down.close());
    for (const name of ["a", "b", "c", "d", "e", "f"]) okJson(await down.get(`/upack/proxy/versions?name=${name}`));
    expect(relay.requests).toEqual(
      ["a", "b", "c", "d", "e", "f"].map((name) => `GET ${fake.base}/upack/feed/versions?group=&name=${name}`),
    );
    expect(fake.requests).toHaveLength(6);
    // Six requests, at most two connections (see fetch-guard.test.ts on undici's pool).
    expect(relay.connections).toBeLessThanOrEqual(2);
  });

  it("go direct to hosts NO_PROXY names (lower-case spelling too)", async () => {
    const { fake, relay } = await upstreamAndProxy();
    const down = await startDownstream({
      env: { http_proxy: relay.url, no_proxy: "localhost,127.0.0.1" },
      connectors: [{ name: "up", url: `${fake.base}/upack/feed` }],
    });
    closers.push(() => down.close());
    okJson(await down.get("/upack/proxy/packages"));
    expect(fake.requests.map((r) => r.path)).toEqual(["/upack/feed/packages?count=1000"]);
    expect(relay.requests).toEqual([]);
  });
});

describe("a feed's object store and the proxy variables", () => {
  it("goes through HTTP_PROXY: a package uploaded and downloaded, every store request relayed", async () => {
    const relay = await startTestProxy();
    const server = await azuriteStoreServer(startAzurite());
    const t = await buildTestApp({ env: { HTTP_PROXY: relay.url } });
    closers.push(
      () => t.close(),
      () => server.stop(),
      () => relay.close(),
    );
    const admin = { "x-apikey": t.adminKey };
    const created = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: admin,
      payload: { name: "packages", feedType: "universal" },
    });
    expect(created.statusCode, created.body).toBe(201);
    const stored = await t.app.inject({
      method: "POST",
      url: "/api/storage?feed=packages",
      headers: admin,
      payload: server.storage,
    });
    expect(stored.statusCode, stored.body).toBe(200);
    const bytes = await buildUpack({ name: "tool", version: "1.0.0", files: { "a.txt": "alpha" } });
    const uploaded = await t.app.inject({
      method: "PUT",
      url: "/upack/packages/upload",
      headers: admin,
      payload: bytes,
    });
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    const downloaded = await t.app.inject({
      method: "GET",
      url: "/upack/packages/download/tool/1.0.0",
      headers: admin,
    });
    expect(downloaded.statusCode).toBe(200);
    expect(downloaded.rawPayload.equals(bytes)).toBe(true);
    // The container's requests (the blob written, then read back) all went through the proxy.
    const endpoint = new URL(server.storage.properties.ConnectionString?.match(/BlobEndpoint=([^;]+)/)?.[1] ?? "");
    expect(relay.requests.some((line) => line.startsWith(`PUT http://${endpoint.host}/`))).toBe(true);
    expect(relay.requests.some((line) => line.startsWith(`GET http://${endpoint.host}/`))).toBe(true);
  });
});

describe("the proxy variables in the configuration", () => {
  const base = { WHARF_DATA_DIR: "/tmp/x" };

  it("are read in either spelling, lower case first, a bare host:port taken as http://", () => {
    const config = loadConfig({
      ...base,
      HTTP_PROXY: "http://upper:3128",
      http_proxy: "proxy.example.com:3128",
      HTTPS_PROXY: "https://user:pw@secure.example.com",
      NO_PROXY: ".internal, 10.0.0.0/8",
    });
    expect(config.outboundProxy).toEqual({
      httpProxy: "http://proxy.example.com:3128/",
      httpsProxy: "https://user:pw@secure.example.com/",
      noProxy: ".internal, 10.0.0.0/8",
    });
    expect(loadConfig({ ...base, NO_PROXY: "x", HTTP_PROXY: "" }).outboundProxy).toBeUndefined();
  });

  it("refuse a proxy that is not an http(s) URL, naming the variable but never its value", () => {
    const load = () => loadConfig({ ...base, HTTPS_PROXY: "socks5://user:s3cret@proxy:1080", HTTP_PROXY: "http://" });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/HTTP_PROXY: must be an http:\/\/ or https:\/\/ URL.*HTTPS_PROXY: must be/);
    expect(load).not.toThrow(/s3cret/);
  });
});
