import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { XMLParser } from "fast-xml-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BADGE_COLOURS, type BadgeState } from "../../src/areas/ci-badges/badge-svg.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * CI badges (docs/seed-api.md area G; docs/compat.md 7.6): the state of the newest matching build's latest
 * execution, one test per state with the SVG parsed; filters AND-combined; links by page.
 */
let t: TestApp;
let r: ReleasesFixtures;
let badgesKey: string;
let appId: number;

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "" });

interface Created {
  build: { id: number; number: string };
  deploymentId: number;
}

beforeAll(async () => {
  // Execution states are set by hand here: no deployment runner.
  t = await buildTestApp({ env: { WHARF_BASE_URL: "https://ci.example.com", WHARF_DEPLOY_CONCURRENCY: "0" } });
  r = releasesFixtures(t);
  badgesKey = await createSystemKey(t.database, ["ci-badges"]);
  appId = await r.setup("Web");
  await r.release(appId, "1.0", "Web-pipeline");
});
afterAll(async () => t.close());

/** A new build of release 1.0 with build variables; it is deployed to the first stage (pending). */
async function newBuild(variables: Record<string, string> = {}): Promise<Created> {
  const vars = Object.fromEntries(Object.entries(variables).map(([k, v]) => [`$${k}`, v]));
  const build = r.ok<{ id: number; number: string }>(
    await r.json("POST", "/api/releases/builds/create", { applicationId: appId, releaseNumber: "1.0", ...vars }),
  );
  const deployment = await r.services.releases.latestDeploymentOf(build.id);
  if (deployment === undefined) throw new Error("a build with a pipeline has a deployment");
  return { build, deploymentId: deployment.id };
}

async function badge(query: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: "GET", url: `/api/ci-badges/image?${query}`, headers });
}

function stateOf(svgText: string): { title: string; colours: string[] } {
  const svg = parser.parse(svgText).svg as Record<string, unknown>;
  expect(svg.viewBox).toMatch(/^0 0 \d+ 56$/);
  const fills = JSON.stringify(svg).match(/#[0-9a-fA-F]{6}/g) ?? [];
  return { title: String(svg.title), colours: fills.map((c) => c.toLowerCase()) };
}

describe("image: one badge per state of the latest execution", () => {
  const cases: Array<[BadgeState, (id: number) => Promise<void>]> = [
    ["pending", async () => {}],
    ["running", async (id) => void (await r.services.releases.startDeployment(id))],
    ["success", async (id) => void (await r.services.releases.completeDeployment(id, "succeeded", "ok"))],
    ["warning", async (id) => void (await r.services.releases.completeDeployment(id, "warned", "hmm"))],
    ["error", async (id) => void (await r.services.releases.completeDeployment(id, "failed", "boom"))],
  ];
  it.each(cases)("%s", async (state, move) => {
    const { build, deploymentId } = await newBuild({ Case: state });
    await move(deploymentId);
    const res = await badge(`API_Key=${badgesKey}&$ApplicationId=${appId}&$BuildNumber=${build.number}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("image/svg+xml");
    expect(res.headers["cache-control"]).toBe("public, max-age=30");
    const { title, colours } = stateOf(res.body);
    expect(title).toBe(state);
    expect(colours).toContain(BADGE_COLOURS[state].toLowerCase());
  });

  it("unknown when no build matches, and for a build never deployed", async () => {
    const res = await badge(`key=${badgesKey}&$ApplicationName=NoSuchApp`);
    expect(res.statusCode).toBe(200);
    expect(stateOf(res.body).title).toBe("unknown");
  });
});

describe("image: filters, encoding, validators, access", () => {
  it("AND-combines the named filters and build variables, newest matching build first", async () => {
    const main = await newBuild({ Branch: "main" });
    await r.services.releases.completeDeployment(main.deploymentId, "succeeded", "");
    const feature = await newBuild({ Branch: "feature" });
    await r.services.releases.completeDeployment(feature.deploymentId, "failed", "");
    const q = (extra: string) => badge(`key=${badgesKey}&$ApplicationName=web&$ReleaseNumber=1.0&${extra}`);
    expect(stateOf((await q("$Branch=main")).body).title).toBe("success");
    expect(stateOf((await q("$Branch=feature")).body).title).toBe("error");
    expect(stateOf((await q("$Branch=feature&$BuildNumber=" + main.build.number)).body).title).toBe("unknown");
    expect(stateOf((await q("$Branch=none")).body).title).toBe("unknown");
  });

  it("gzips when accepted, answers 304 to its ETag, and takes the key in a form body too", async () => {
    const plain = await badge(`key=${badgesKey}&$ApplicationName=NoSuchApp`);
    const zipped = await badge(`key=${badgesKey}&$ApplicationName=NoSuchApp`, { "accept-encoding": "gzip, br" });
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(zipped.rawPayload).toString()).toBe(plain.body);
    expect(zipped.headers.etag).not.toBe(plain.headers.etag);
    const again = await badge(`key=${badgesKey}&$ApplicationName=NoSuchApp`, {
      "if-none-match": String(plain.headers.etag),
    });
    expect(again.statusCode).toBe(304);
    const posted = await t.app.inject({
      method: "POST",
      url: "/api/ci-badges/image",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `API_Key=${badgesKey}&$ApplicationName=NoSuchApp`,
    });
    expect(posted.statusCode).toBe(200);
    expect(stateOf(posted.body).title).toBe("unknown");
  });

  it("304 for a weak or wildcard If-None-Match; gzip;q=0 refuses gzip", async () => {
    const q = `key=${badgesKey}&$ApplicationName=NoSuchApp`;
    const plain = await badge(q);
    const zipped = await badge(q, { "accept-encoding": "gzip" });
    for (const [tag, encoding] of [
      [`W/${String(plain.headers.etag)}`, "identity"],
      [`"other", W/${String(zipped.headers.etag)}`, "gzip"],
      ["*", "gzip"],
    ] as const) {
      const res = await badge(q, { "if-none-match": tag, "accept-encoding": encoding });
      expect(res.statusCode, tag).toBe(304);
      expect(res.body).toBe("");
    }
    expect((await badge(q, { "if-none-match": '"other"' })).statusCode).toBe(200);
    for (const refusal of ["gzip;q=0", "gzip; q=0.0, identity", "*;q=0, identity"]) {
      const res = await badge(q, { "accept-encoding": refusal });
      expect(res.headers["content-encoding"], refusal).toBeUndefined();
      expect(res.body).toBe(plain.body);
    }
    // A client that takes brotli and not gzip gets the plain badge brotli-encoded (http/compression.ts).
    const brotli = await badge(q, { "accept-encoding": "br" });
    expect(brotli.headers["content-encoding"]).toBe("br");
    expect(brotli.headers.vary).toBe("Accept-Encoding");
    expect(brotli.headers.etag).toBe(`W/${String(plain.headers.etag)}`);
    expect(brotliDecompressSync(brotli.rawPayload).toString()).toBe(plain.body);
    for (const accepted of ["gzip;q=0.5", "*", "br, GZIP;Q=1", "x-gzip", "deflate, *;q=0.1"]) {
      const res = await badge(q, { "accept-encoding": accepted });
      expect(res.headers["content-encoding"], accepted).toBe("gzip");
    }
  });

  it("400, not 500, for more build-variable filters than a badge URL needs", async () => {
    const pairs = Array.from({ length: 1_000 }, (_, i) => `$v${i}=x`).join("&");
    for (const path of ["image", "link"]) {
      const res = await t.app.inject({ method: "GET", url: `/api/ci-badges/${path}?key=${badgesKey}&${pairs}` });
      expect(res.statusCode, path).toBe(400);
      expect(res.headers["content-type"]).toBe("text/plain");
      expect(res.body).toMatch(/at most 50/);
    }
    const fifty = Array.from({ length: 50 }, (_, i) => `$v${i}=x`).join("&");
    expect((await badge(`key=${badgesKey}&${fifty}`)).statusCode).toBe(200);
  });

  it("403 for an unknown key or one without the ci-badges scope", async () => {
    for (const key of ["not-a-key", await createSystemKey(t.database, ["feeds"])]) {
      const res = await badge(`key=${key}&$ApplicationId=${appId}`);
      expect(res.statusCode).toBe(403);
      expect(res.headers["content-type"]).toBe("text/plain");
    }
  });
});

describe("link: 303 to the page the build is shown on", () => {
  it("redirects by page, and the JSON views answer there", async () => {
    const { build, deploymentId } = await newBuild({ Link: "yes" });
    const link = (page?: string) =>
      t.app.inject({
        method: "GET",
        url: `/api/ci-badges/link?key=${badgesKey}&$ApplicationId=${appId}&$Link=yes${page ? `&page=${page}` : ""}`,
      });
    const expected: Record<string, string> = {
      build: `/applications/${appId}/builds/${build.id}`,
      release: `/applications/${appId}/releases/1.0`,
      application: `/applications/${appId}`,
      execution: `/applications/${appId}/executions/${deploymentId}`,
    };
    expect((await link()).headers.location).toBe(`https://ci.example.com${expected.build}`);
    for (const [page, path] of Object.entries(expected)) {
      const res = await link(page);
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe(`https://ci.example.com${path}`);
      const view = await r.json("GET", path);
      expect(view.statusCode, path).toBe(200);
    }
    const execution = await r.json("GET", expected.execution as string);
    expect(execution.json()).toMatchObject({ id: deploymentId, buildNumber: build.number });
    expect((await link("dashboard")).statusCode).toBe(400);
    const none = await t.app.inject({
      method: "GET",
      url: `/api/ci-badges/link?key=${badgesKey}&$ApplicationName=NoSuchApp`,
    });
    expect(none.statusCode).toBe(400);
    const forbidden = await t.app.inject({
      method: "GET",
      url: `/api/ci-badges/link?key=nope&$ApplicationId=${appId}`,
    });
    expect(forbidden.statusCode).toBe(403);
  });
});
