import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { writeFromOutside } from "../helpers/app.js";
import {
  type Downstream,
  expectError,
  type FakeUpstream,
  movableClock,
  okJson,
  sendJson,
  startDownstream,
  startFakeUpstream,
  startUpstreamWharf,
  type UpstreamWharf,
} from "../helpers/connector-fixtures.js";
import { readAll } from "../helpers/fixtures.js";

/**
 * Connectors when the upstream is down, slow, failing or not allowed (docs/PRODUCT.md: "connectors
 * that keep serving cached packages when the upstream is down, with an SSRF guard"): stale
 * metadata and cached packages keep being served; what only the upstream could answer is a 502
 * or 504 naming the connector, never a 500 and never a 404 kept past the negative-cache time;
 * repeated failures open a circuit that is retried with backoff; the fetch guard refuses
 * metadata and (without WHARF_FETCH_ALLOW_PRIVATE) loopback addresses before any request leaves.
 */

interface PackageJson {
  group?: string;
  name: string;
  isLocal: boolean;
  isCached: boolean;
}
interface VersionJson {
  version: string;
  isLocal: boolean;
  isCached: boolean;
}

describe("the upstream goes away: cached metadata and packages keep being served", () => {
  let up: UpstreamWharf;
  let down: Downstream;

  beforeAll(async () => {
    up = await startUpstreamWharf();
    await up.upack.addVersion("remote", { group: "acme", name: "tool", version: "1.0.0" });
    await up.upack.addVersion("remote", { group: "acme", name: "tool", version: "1.1.0" });
    await up.upack.addVersion("remote", { name: "other", version: "1.0.0" });
    // metadataCacheMinutes 0: every request asks the upstream, and falls back to what it kept.
    down = await startDownstream({
      connectors: [{ name: "up", url: up.feedUrl, ...up.credentials, metadataCacheMinutes: 0 }],
    });
    await down.upack.addVersion("proxy", { name: "mine", version: "1.0.0" });
  });
  afterAll(async () => {
    await down?.close();
    await up?.close();
  });

  it("while the upstream is up: lists and pulls", async () => {
    expect(okJson<PackageJson[]>(await down.get("/upack/proxy/packages")).map((p) => p.name)).toEqual([
      "mine",
      "other",
      "tool",
    ]);
    expect(okJson<VersionJson[]>(await down.get("/upack/proxy/versions?group=acme&name=tool"))).toHaveLength(2);
    expect((await down.get("/upack/proxy/download/acme/tool/1.1.0")).statusCode).toBe(200);
    await vi.waitFor(
      async () => {
        const one = okJson<VersionJson>(await down.get("/upack/proxy/versions?group=acme&name=tool&version=1.1.0"));
        expect(one.isCached).toBe(true);
      },
      { timeout: 5_000, interval: 20 },
    );
  });

  it("after it stops: stale lists, the cached package, and 502s naming the connector for the rest", async () => {
    await up.stop();
    const list = okJson<PackageJson[]>(await down.get("/upack/proxy/packages"));
    expect(list.map((p) => p.name)).toEqual(["mine", "other", "tool"]);
    const versions = okJson<VersionJson[]>(await down.get("/upack/proxy/versions?group=acme&name=tool"));
    expect(versions.map((v) => [v.version, v.isLocal, v.isCached])).toEqual([
      ["1.1.0", false, true],
      ["1.0.0", false, false],
    ]);
    const cached = await down.get("/upack/proxy/download/acme/tool/1.1.0");
    expect(cached.statusCode).toBe(200);
    expect(cached.rawPayload.subarray(0, 2).toString("latin1")).toBe("PK");
    expect((await down.get("/upack/proxy/download-file/acme/tool/1.1.0?path=upack.json")).statusCode).toBe(200);
    // Only the upstream could answer these: never a 500, never a 404.
    expectError(await down.get("/upack/proxy/download/acme/tool/1.0.0"), 502, "Connector 'up'");
    expectError(await down.get("/upack/proxy/packages?name=other"), 502, "Connector 'up'");
    expectError(await down.get("/upack/proxy/versions?name=never-seen&version=1.0.0"), 502, "Connector 'up'");
    expectError(await down.get("/upack/proxy/versions?name=never-seen"), 502, "Connector 'up'");
    // What the feed stores needs no upstream.
    expect(okJson<VersionJson[]>(await down.get("/upack/proxy/versions?name=mine"))).toHaveLength(1);
  });
});

describe("a slow upstream", () => {
  let fake: FakeUpstream;
  let down: Downstream;

  beforeAll(async () => {
    fake = await startFakeUpstream(() => undefined); // never answers
    down = await startDownstream({ connectors: [{ name: "slow", url: `${fake.base}/upack/feed`, timeout: 1 }] });
  });
  afterAll(async () => {
    await down?.close();
    await fake?.close();
  });

  it("gives a 504 naming the connector after the connector's timeout", async () => {
    const started = Date.now();
    const res = await down.get("/upack/proxy/packages?name=anything");
    expectError(res, 504, "Connector 'slow'");
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(Date.now() - started).toBeLessThan(3_000);
    expectError(await down.get("/upack/proxy/download/anything/1.0.0"), 504, "Connector 'slow'");
  });
});

describe("an upstream that keeps failing: the circuit opens, then is retried with backoff", () => {
  let fake: FakeUpstream;
  let down: Downstream;
  const clock = movableClock();
  const asked = () => fake.requests.length;

  beforeAll(async () => {
    fake = await startFakeUpstream((_request, response) => void response.writeHead(500).end("boom"));
    down = await startDownstream({
      clock,
      connectors: [{ name: "flaky", url: `${fake.base}/upack/feed`, metadataCacheEnabled: false }],
    });
    await down.upack.addVersion("proxy", { name: "mine", version: "1.0.0" });
  });
  afterAll(async () => {
    await down?.close();
    await fake?.close();
  });

  it("answers 502 for each failure, then stops asking after three", async () => {
    for (let i = 1; i <= 3; i++) {
      expectError(await down.get("/upack/proxy/packages?name=a"), 502, "Connector 'flaky'", "HTTP 500");
      expect(asked()).toBe(i);
    }
    const open = await down.get("/upack/proxy/packages?name=a");
    expectError(open, 502, "Connector 'flaky' is unavailable");
    expect(open.headers["x-wharf-error"]).toBe("CONNECTOR_UNAVAILABLE");
    expectError(await down.get("/upack/proxy/download/a/1.0.0"), 502, "Connector 'flaky'");
    expect(asked()).toBe(3);
    // The feed's own packages are still listed and served meanwhile.
    expect(okJson<PackageJson[]>(await down.get("/upack/proxy/packages")).map((p) => p.name)).toEqual(["mine"]);
    expect((await down.get("/upack/proxy/download/mine/1.0.0")).statusCode).toBe(200);
    expect(asked()).toBe(3);
  });

  it("lets one request through after the backoff; a failed probe doubles it; a good one closes the circuit", async () => {
    clock.advance(5_001);
    expectError(await down.get("/upack/proxy/packages?name=a"), 502, "HTTP 500");
    expect(asked()).toBe(4);
    clock.advance(5_001); // the backoff is 10 s now
    expectError(await down.get("/upack/proxy/packages?name=a"), 502, "unavailable");
    expect(asked()).toBe(4);
    fake.handle = (_request, response) => void response.writeHead(404).end();
    clock.advance(5_000);
    expectError(await down.get("/upack/proxy/packages?name=a"), 404);
    expect(asked()).toBe(5);
    expectError(await down.get("/upack/proxy/packages?name=a"), 404);
    expect(asked()).toBe(6);
  });
});

describe("negative (404) answers are kept only for WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS", () => {
  let fake: FakeUpstream;
  let down: Downstream;
  const clock = movableClock();
  const published = new Set<string>();

  beforeAll(async () => {
    fake = await startFakeUpstream((request, response) => {
      const name = new URL(request.url ?? "/", "http://x").searchParams.get("name") ?? "";
      if (!published.has(name)) return void response.writeHead(404).end();
      sendJson(response, 200, { name, latestVersion: "1.0.0", versions: ["1.0.0"] });
    });
    down = await startDownstream({
      clock,
      env: { WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS: "30" },
      connectors: [{ name: "up", url: `${fake.base}/upack/feed` }],
    });
  });
  afterAll(async () => {
    await down?.close();
    await fake?.close();
  });

  it("serves a kept 404 for 30 s, then asks again and finds what was published meanwhile", async () => {
    expectError(await down.get("/upack/proxy/packages?name=late"), 404);
    expectError(await down.get("/upack/proxy/packages?name=late"), 404);
    expect(fake.requests).toHaveLength(1);
    published.add("late");
    clock.advance(29_000);
    expectError(await down.get("/upack/proxy/packages?name=late"), 404);
    expect(fake.requests).toHaveLength(1);
    clock.advance(2_000);
    expect(okJson<PackageJson>(await down.get("/upack/proxy/packages?name=late"))).toMatchObject({
      name: "late",
      isLocal: false,
    });
    expect(fake.requests).toHaveLength(2);
    // A positive answer is fresh for metadataCacheMinutes (30 by default).
    clock.advance(60_000);
    expect((await down.get("/upack/proxy/packages?name=late")).statusCode).toBe(200);
    expect(fake.requests).toHaveLength(2);
  });

  it("never serves an expired 404 when the upstream then fails: 502, not 404", async () => {
    expectError(await down.get("/upack/proxy/packages?name=gone"), 404);
    fake.handle = (_request, response) => void response.writeHead(503).end();
    clock.advance(31_000);
    expectError(await down.get("/upack/proxy/packages?name=gone"), 502, "Connector 'up'", "503");
  });
});

describe("404s never push out the answers that serve while the upstream is down", () => {
  let fake: FakeUpstream;
  let failing = false;

  beforeAll(async () => {
    fake = await startFakeUpstream((request, response) => {
      if (failing) return void response.writeHead(503).end();
      const name = new URL(request.url ?? "/", "http://x").searchParams.get("name") ?? "";
      if (name !== "kept") return void response.writeHead(404).end();
      sendJson(response, 200, { name, latestVersion: "1.0.0", versions: ["1.0.0"] });
    });
  });
  afterEach(() => {
    failing = false;
  });
  afterAll(async () => {
    await fake?.close();
  });

  const keptKeys = (down: Downstream) =>
    readAll(down.t.database, "SELECT request_key AS key, status FROM connector_metadata ORDER BY key");

  for (const [seconds, kept404s] of [
    ["0", []],
    ["30", [{ key: "packages?group=&name=unknown-3", status: 404 }]],
  ] as const) {
    it(`WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS=${seconds}: ${seconds === "0" ? "404s are not kept" : "404s are evicted first"}`, async () => {
      const clock = movableClock();
      const down = await startDownstream({
        clock,
        env: { WHARF_CONNECTOR_NEGATIVE_CACHE_SECONDS: seconds },
        connectors: [{ name: "up", url: `${fake.base}/upack/feed`, metadataCacheMinutes: 1, metadataCacheCount: 2 }],
      });
      try {
        expect(okJson<PackageJson>(await down.get("/upack/proxy/packages?name=kept")).name).toBe("kept");
        for (let i = 1; i <= 3; i++) {
          clock.advance(1_000);
          expectError(await down.get(`/upack/proxy/packages?name=unknown-${i}`), 404);
        }
        expect(await keptKeys(down)).toEqual([{ key: "packages?group=&name=kept", status: 200 }, ...kept404s]);
        // Stale now, and the upstream fails: the kept 200 is the answer.
        clock.advance(60_000);
        failing = true;
        expect(okJson<PackageJson>(await down.get("/upack/proxy/packages?name=kept")).name).toBe("kept");
      } finally {
        await down.close();
      }
    });
  }
});

describe("metadataCacheCount", () => {
  it("bounds the answers kept per connector, the least recently fetched going first", async () => {
    const fake = await startFakeUpstream((request, response) => {
      const name = new URL(request.url ?? "/", "http://x").searchParams.get("name") ?? "";
      sendJson(response, 200, [{ name, version: "1.0.0" }]);
    });
    const clock = movableClock();
    const down = await startDownstream({
      clock,
      connectors: [{ name: "up", url: `${fake.base}/upack/feed`, metadataCacheCount: 2 }],
    });
    try {
      for (const name of ["a", "b", "c"]) {
        expect(okJson<VersionJson[]>(await down.get(`/upack/proxy/versions?name=${name}`))).toHaveLength(1);
        clock.advance(1_000);
      }
      const kept = await readAll(down.t.database, "SELECT request_key AS key FROM connector_metadata ORDER BY key");
      expect(kept).toEqual([{ key: "versions?group=&name=b" }, { key: "versions?group=&name=c" }]);
      // "a" is asked again; "c" is still fresh.
      await down.get("/upack/proxy/versions?name=a");
      await down.get("/upack/proxy/versions?name=c");
      expect(fake.requests.map((r) => new URL(r.path, "http://x").searchParams.get("name"))).toEqual([
        "a",
        "b",
        "c",
        "a",
      ]);
    } finally {
      await down.close();
      await fake.close();
    }
  });
});

describe("the fetch guard", () => {
  afterEach(() => vi.restoreAllMocks());

  it("refuses a connector at the cloud metadata address: 502 with the guard's message, no request sent", async () => {
    // Refused as it is set (connector-url-check.test.ts); here, one whose name has come to resolve there.
    const down = await startDownstream({ connectors: [{ name: "meta", url: "http://meta-upstream.invalid/upack/x" }] });
    await writeFromOutside(
      down.t,
      "UPDATE connectors SET url = 'http://169.254.169.254/upack/x' WHERE name_key = 'meta'",
    );
    const connect = vi.spyOn(net, "connect");
    try {
      const res = await down.get("/upack/proxy/packages?name=x");
      expectError(res, 502, "Connector 'meta'", "Refused to fetch from 169.254.169.254", "cloud metadata");
      expect(res.headers["x-wharf-error"]).toBe("FETCH_ADDRESS_REFUSED");
      expectError(await down.get("/upack/proxy/download/x/1.0.0"), 502, "Connector 'meta'");
      expectError(await down.get("/upack/proxy/versions?name=x"), 502, "Connector 'meta'");
      expect(connect).not.toHaveBeenCalled();
    } finally {
      await down.close();
    }
  });

  it("refuses a loopback upstream unless WHARF_FETCH_ALLOW_PRIVATE is set", async () => {
    const fake = await startFakeUpstream((_request, response) => sendJson(response, 200, []));
    // Refused as it is set (connector-url-check.test.ts); here, one stored under WHARF_FETCH_ALLOW_PRIVATE=true.
    const down = await startDownstream({
      env: { WHARF_FETCH_ALLOW_PRIVATE: "false" },
      connectors: [{ name: "local", url: "http://local-upstream.invalid/upack/feed" }],
    });
    await writeFromOutside(down.t, "UPDATE connectors SET url = ? WHERE name_key = 'local'", `${fake.base}/upack/feed`);
    try {
      expectError(
        await down.get("/upack/proxy/packages?name=x"),
        502,
        "Connector 'local'",
        "loopback",
        "unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true",
      );
      expect(fake.requests).toHaveLength(0);
    } finally {
      await down.close();
      await fake.close();
    }
  });
});
