import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import {
  type FakeUpstream,
  okJson,
  sendJson,
  startDownstream,
  startFakeUpstream,
} from "../helpers/connector-fixtures.js";
import { type TestProxy, startTestProxy } from "../helpers/http-proxy.js";

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
