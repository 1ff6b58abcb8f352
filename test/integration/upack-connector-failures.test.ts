import type { IncomingMessage, ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Downstream,
  type FakeUpstream,
  okJson,
  sendJson,
  startDownstream,
  startFakeUpstream,
  startUpstreamWharf,
  type UpstreamWharf,
} from "../helpers/connector-fixtures.js";

/**
 * A listing given without a connector that failed says so (README "Connectors"): the
 * Wharf-Connector-Failures header names each failed connector and its error code, on every
 * answer that merges connectors, and only on those answers, never replayed from a cache.
 * The failing upstreams are real HTTP servers on loopback: one answers 500, one closes the socket.
 */

const HEADER = "wharf-connector-failures";
const answer500 = (_request: IncomingMessage, response: ServerResponse) =>
  void response.writeHead(500, { "content-type": "text/plain" }).end("boom");
const closeSocket = (request: IncomingMessage) => void request.socket.destroy();

describe("a feed whose connectors fail", () => {
  let good: UpstreamWharf;
  let failing: FakeUpstream;
  let closing: FakeUpstream;
  let down: Downstream;

  beforeAll(async () => {
    good = await startUpstreamWharf();
    for (const version of ["1.0.0", "2.0.0"]) await good.upack.addVersion("remote", { name: "tool", version });
    failing = await startFakeUpstream(answer500);
    closing = await startFakeUpstream(closeSocket);
    down = await startDownstream({
      connectors: [
        // Credentials and caching as an administrator would set them; neither may show in the header.
        { name: "failing", url: `${failing.base}/upack/feed`, username: "api", password: "s3cret-pw" },
        { name: "closing", url: `${closing.base}/upack/feed`, metadataCacheEnabled: false },
        { name: "good", url: good.feedUrl, ...good.credentials },
      ],
    });
    await down.upack.addVersion("proxy", { name: "own", version: "1.0.0" });
  });
  afterAll(async () => {
    await down.close();
    await good.close();
    await failing.close();
    await closing.close();
  });

  // After three failures in a row a connector's circuit opens: it is not asked, and says so.
  const expectedHeader = /^failing=CONNECTOR_(HTTP_ERROR|UNAVAILABLE), closing=(FETCH_FAILED|CONNECTOR_UNAVAILABLE)$/;

  it("lists what the feed and the other connectors have, and names the failed connectors in a header", async () => {
    const res = await down.get("/upack/proxy/packages");
    const names = okJson<{ name: string }[]>(res).map((p) => p.name);
    expect(names).toEqual(["own", "tool"]);
    expect(res.headers[HEADER]).toMatch(expectedHeader);
    expect(failing.requests.length).toBeGreaterThan(0);
    expect(closing.requests.length).toBeGreaterThan(0);
  });

  it.each([
    "/upack/proxy/packages?name=tool",
    "/upack/proxy/versions",
    "/upack/proxy/versions?name=tool",
    "/upack/proxy/versions?name=tool&version=2.0.0",
    "/upack/proxy/search?term=to",
    "/upack/proxy/search",
  ])("says so on %s too", async (url) => {
    const res = await down.get(url);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers[HEADER]).toMatch(expectedHeader);
  });

  it("says so on a ?latest download, whose highest version is a listing's answer", async () => {
    const res = await down.get("/upack/proxy/download/tool?latest");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-disposition"]).toContain("tool.2.0.0.upack");
    expect(res.headers[HEADER]).toMatch(expectedHeader);
    const own = await down.get("/upack/proxy/download/own?latest");
    expect(own.statusCode).toBe(200);
    expect(own.headers[HEADER]).toBeUndefined();
  });

  it("never shows credentials, URLs or messages, only names and codes", async () => {
    const res = await down.get("/upack/proxy/packages");
    const header = String(res.headers[HEADER]);
    for (const leak of ["s3cret", "api", "http", "127.0.0.1", "500", "boom"]) expect(header).not.toContain(leak);
  });

  it("leaves the header off answers that merge no connector or that every connector answered", async () => {
    expect((await down.get("/upack/proxy/versions?name=own")).headers[HEADER]).toBeUndefined();
    expect((await down.get("/upack/proxy/meta")).headers[HEADER]).toBeUndefined();
    expect((await down.get("/upack/proxy/download/own/1.0.0")).headers[HEADER]).toBeUndefined();
  });

  it("drops the header as soon as the upstreams answer again: the local caches never replay it", async () => {
    const healthy = (_request: IncomingMessage, response: ServerResponse) => sendJson(response, 200, []);
    failing.handle = healthy;
    closing.handle = healthy;
    // Their circuits may be open after the requests above: wait them out, at most a few seconds.
    const deadline = Date.now() + 15_000;
    let res = await down.get("/upack/proxy/packages");
    while (res.headers[HEADER] !== undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      res = await down.get("/upack/proxy/packages");
    }
    expect(res.headers[HEADER]).toBeUndefined();
    expect(okJson<{ name: string }[]>(res).map((p) => p.name)).toEqual(["own", "tool"]);
    expect((await down.get("/upack/proxy/download/tool?latest")).headers[HEADER]).toBeUndefined();
    // `failing` keeps its answers (metadata cache) and serves them while it fails: no failure then.
    failing.handle = answer500;
    closing.handle = closeSocket;
    const again = await down.get("/upack/proxy/versions?name=tool");
    expect(again.headers[HEADER]).toBe("closing=FETCH_FAILED");
  }, 30_000);
});
