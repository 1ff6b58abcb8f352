import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createUser, grant } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * The web UI's delivery pages (issue 16, part C): applications, releases, builds and executions,
 * the actions of the releases API as form posts, and the badge link targets answering a browser
 * with the page and every other client with the releases area's JSON. Viewers sign in through the
 * sign-in form (a real session cookie); the attacks: stored names and log lines rendered as text,
 * the cookie never authenticating the JSON, forged posts without the privilege or without CSRF.
 */

const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const HOSTILE = `<img src=x onerror="alert(1)">&"'`;
const HOSTILE_ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;&quot;&#39;";
const HOSTILE_LOG = `<script>alert("log")</script>`;

let t: TestApp;
let r: ReleasesFixtures;
let appId: number;
let otherAppId: number;
let releaseNumber: string;
const PASSWORD = "a-long-password-1";

/** A signed-in browser: its session cookie, and the CSRF token the pages carry. */
interface Session {
  readonly cookie: string;
  page(url: string, accept?: string): Promise<LightMyRequestResponse>;
  post(url: string, form: Record<string, string>, withToken?: boolean): Promise<LightMyRequestResponse>;
}

async function signIn(user: string): Promise<Session> {
  const form = await t.app.inject({ url: "/sign-in" });
  const token = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? "";
  const signInCookie = form.cookies.map((c) => `${c.name}=${c.value}`).join("; ");
  const res = await t.app.inject({
    method: "POST",
    url: "/sign-in",
    headers: { cookie: signInCookie, "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams({ _csrf: token, user, password: PASSWORD }).toString(),
  });
  expect(res.statusCode, res.body).toBe(303);
  const session = res.cookies.find((c) => c.name === "wharf_session");
  expect(session?.value).toBeTruthy();
  const cookie = `wharf_session=${session?.value ?? ""}`;
  const page = (url: string, accept = BROWSER_ACCEPT) => t.app.inject({ url, headers: { cookie, accept } });
  return {
    cookie,
    page,
    async post(url, fields, withToken = true) {
      const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec((await page("/applications")).body)?.[1] ?? "";
      return t.app.inject({
        method: "POST",
        url,
        headers: { cookie, "content-type": "application/x-www-form-urlencoded", accept: BROWSER_ACCEPT },
        payload: new URLSearchParams({ ...fields, ...(withToken && { _csrf: csrf }) }).toString(),
      });
    },
  };
}

let viewer: Session;
let deployer: Session;
let stranger: Session;

/** Waits until the runner has ended every deployment of the build (the log step is quick). */
async function settled(buildId: number): Promise<Array<{ id: number; status: string }>> {
  for (let i = 0; i < 100; i += 1) {
    const list = r.ok<Array<{ id: number; status: string }>>(
      await r.json("GET", `/api/releases/builds/deployments?buildId=${buildId}`),
    );
    if (list.every((d) => !["pending", "executing"].includes(d.status))) return list;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("deployments did not end");
}

beforeAll(async () => {
  t = await buildTestApp();
  r = releasesFixtures(t);
  appId = await r.setup("WebShop");
  otherAppId = await r.setup("Other", { pipeline: "other-pipeline" });
  // A stored description and a release name and number with markup; a plan that logs markup.
  r.ok(await r.json("POST", "/api/applications/update", { id: appId, description: HOSTILE }));
  const stages = ["Integration", "Testing", "Production"].map((name) => ({
    name,
    environmentName: name,
    plan: [{ type: "log", message: `${HOSTILE_LOG} in ${name}` }],
  }));
  r.ok(await r.json("POST", "/api/pipelines/create", { name: "hostile", stages, rejectOlderBuilds: false }));
  releaseNumber = `1.0<b>`;
  r.ok(
    await r.json("POST", "/api/releases/create", {
      applicationId: appId,
      releaseNumber,
      releaseName: HOSTILE,
      pipelineName: "hostile",
    }),
  );
  for (const [name, attributes] of [
    ["viewer", ["Applications_View"]],
    [
      "deployer",
      [
        "Applications_View",
        "Releases_Manage",
        "ReleasePackages_Create",
        "ReleasePackages_Deploy",
        "ReleasePackages_Manage",
      ],
    ],
    ["stranger", []],
  ] as const) {
    const user = await createUser(t.database, name, PASSWORD);
    if (attributes.length > 0) await grant(t.database, { user, attributes: [...attributes] });
  }
  viewer = await signIn("viewer");
  deployer = await signIn("deployer");
  stranger = await signIn("stranger");
}, 60_000);

afterAll(async () => {
  await t?.close();
});

const releaseUrl = () => `/applications/${appId}/releases/${encodeURIComponent(releaseNumber)}`;

describe("delivery pages", () => {
  it("lists applications for a viewer; Anonymous is sent to sign in, a stranger gets 403", async () => {
    const res = await viewer.page("/applications");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    expect(res.body).toContain(`<a href="/applications/${appId}">WebShop</a>`);
    expect(res.body).toContain(`<a href="/applications/${otherAppId}">Other</a>`);
    expect(res.body).toContain(HOSTILE_ESCAPED);
    expect(res.body).not.toContain(HOSTILE);

    const anonymous = await t.app.inject({ url: "/applications", headers: { accept: BROWSER_ACCEPT } });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe("/sign-in?next=%2Fapplications");
    expect((await stranger.page("/applications")).statusCode).toBe(403);
    expect((await stranger.page(`/applications/${appId}`)).statusCode).toBe(403);
  });

  it("shows an application's releases, recent builds and badge builder, names as text, no action for a viewer", async () => {
    const res = await viewer.page(`/applications/${appId}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain("<h1>WebShop</h1>");
    expect(res.body).toContain(`<a href="${releaseUrl()}">1.0&lt;b&gt;</a>`);
    expect(res.body).toContain(HOSTILE_ESCAPED);
    expect(res.body).not.toMatch(/<img src=x|<b>/);
    // Badge builder: the image and link URLs of the ci-badges area, with the application's filter.
    expect(res.body).toContain(`src="/ui/api/ci-badges/image?%24ApplicationId=${appId}"`);
    expect(res.body).toContain(
      `href="http://localhost:80/api/ci-badges/link?%24ApplicationId=${appId}&amp;page=application"`,
    );
    // The preview is the badge image for the session (the API's image route never takes the cookie).
    const preview = await viewer.page(`/ui/api/ci-badges/image?%24ApplicationId=${appId}`, "image/*");
    expect(preview.statusCode).toBe(200);
    expect(preview.headers["content-type"]).toMatch(/^image\/svg\+xml/);
    const api = await t.app.inject({
      url: `/api/ci-badges/image?%24ApplicationId=${appId}`,
      headers: { cookie: viewer.cookie },
    });
    expect(api.statusCode).toBe(403);
    expect((await stranger.page(`/ui/api/ci-badges/image?%24ApplicationId=${appId}`, "image/*")).statusCode).toBe(403);
    expect(res.body).toContain(
      `[![Build status](http://localhost:80/api/ci-badges/image?%24ApplicationId=${appId})](http://localhost:80/api/ci-badges/link?%24ApplicationId=${appId}&amp;page=application)`,
    );
    expect(res.body).not.toContain('<form method="post" action="/applications/');
  });

  it("offers a deployer only the actions that can apply: no build form without an active release", async () => {
    const other = await deployer.page(`/applications/${otherAppId}`);
    expect(other.statusCode).toBe(200);
    expect(other.body).toContain("Create a release");
    expect(other.body).not.toContain("Create a build");
    const release = await viewer.page(releaseUrl());
    expect(release.statusCode).toBe(200);
    expect(release.body).toContain("<h1>Release 1.0&lt;b&gt;</h1>");
    expect(release.body).toContain(`<dt>Name</dt><dd>${HOSTILE_ESCAPED}</dd>`);
    expect(release.body).toMatch(/<ol class="stages">\s*<li><span>Integration<\/span><\/li>/);
    expect(release.body).not.toContain("Cancel release");
  });

  it("answers 404 pages for unknown or mismatched ids", async () => {
    for (const url of [
      "/applications/999",
      "/applications/abc",
      `/applications/${appId}/releases/9.9`,
      `/applications/${appId}/builds/999`,
      `/applications/${appId}/executions/999`,
    ]) {
      const res = await viewer.page(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.headers["content-type"], url).toMatch(/^text\/html/);
    }
  });
});

describe("actions through the pages", () => {
  let buildId: number;

  it("a deployer creates a build of the release; the build page shows the pipeline and where it stands", async () => {
    const release = await deployer.page(releaseUrl());
    expect(release.statusCode).toBe(200);
    expect(release.body).toContain(`action="${releaseUrl().replace(/%/g, "%")}/builds"`);
    expect(release.body).toContain("Cancel release");

    const created = await deployer.post(`${releaseUrl()}/builds`, {});
    expect(created.statusCode, created.body).toBe(303);
    const location = created.headers.location as string;
    expect(location).toMatch(new RegExp(`^/applications/${appId}/builds/\\d+$`));
    buildId = Number(location.split("/").pop());
    const deployments = await settled(buildId);
    expect(deployments).toHaveLength(1);

    const page = await deployer.page(location);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("<h1>Build 1</h1>");
    expect(page.body).toMatch(/<strong>Integration<\/strong>[\s\S]*state-succeeded/);
    expect(page.body).toMatch(/<li aria-current="step">\s*<strong>Testing<\/strong>/);
    expect(page.body).toContain("Deploy to Testing</button>");
    expect(page.body).toContain("Reject build</button>");
    expect(page.body).toContain("%24BuildNumber=1");
    // The viewer sees the same page without a button.
    const seen = await viewer.page(location);
    expect(seen.body).toContain("<strong>Testing</strong>");
    expect(seen.body).not.toContain("Deploy to");
    expect(seen.body).not.toContain("Reject build");
  });

  it("deploys to the next stage, and the execution page shows its log as text", async () => {
    const res = await deployer.post(`/applications/${appId}/builds/${buildId}/deploy`, {});
    expect(res.statusCode, res.body).toBe(303);
    const location = res.headers.location as string;
    expect(location).toMatch(new RegExp(`^/applications/${appId}/executions/\\d+$`));
    await settled(buildId);
    const page = await viewer.page(location);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Deployment #");
    expect(page.body).toContain("&lt;script&gt;alert(&quot;log&quot;)&lt;/script&gt; in Testing");
    expect(page.body).not.toContain(HOSTILE_LOG);
    expect(page.body).toContain("state-succeeded");

    // The log route of the page's script: from an offset, JSON, for the session.
    const full = await viewer.page(`/ui${location}/log`, "application/json");
    expect(full.statusCode).toBe(200);
    const body = full.json() as { status: string; text: string; next: number; running: boolean };
    expect(body).toMatchObject({ status: "succeeded", running: false });
    expect(body.text).toContain(`${HOSTILE_LOG} in Testing`);
    const tail = (await viewer.page(`/ui${location}/log?from=${body.next - 7}`, "application/json")).json();
    expect(tail).toMatchObject({ text: body.text.slice(-7), next: body.next });
    expect((await stranger.page(`/ui${location}/log`, "application/json")).statusCode).toBe(403);
    expect((await t.app.inject({ url: `/ui${location}/log` })).statusCode).toBe(403);
  });

  it("refuses a viewer's forged posts (403) and a post without its CSRF token (403), changing nothing", async () => {
    for (const url of [
      `/applications/${appId}/builds/${buildId}/deploy`,
      `/applications/${appId}/builds/${buildId}/reject`,
      `${releaseUrl()}/cancel`,
      `${releaseUrl()}/builds`,
      `/applications/${appId}/releases`,
    ]) {
      const forged = await viewer.post(url, { releaseNumber: "9", pipelineName: "hostile" });
      expect(forged.statusCode, url).toBe(403);
      const noToken = await deployer.post(url, { releaseNumber: "9", pipelineName: "hostile" }, false);
      expect(noToken.statusCode, url).toBe(403);
    }
    const builds = r.ok<unknown[]>(await r.json("GET", `/api/releases/builds?applicationId=${appId}`));
    expect(builds).toHaveLength(1);
    const releases = r.ok<Array<{ status: string }>>(await r.json("GET", `/api/releases?applicationId=${appId}`));
    expect(releases.map((release) => release.status)).toEqual(["active"]);
  });

  it("refuses acting on another application's build through this application's URL", async () => {
    const res = await deployer.post(`/applications/${otherAppId}/builds/${buildId}/reject`, {});
    expect(res.statusCode).toBe(404);
  });

  it("rejects the build, cancels and restores the release, creates a release; a refusal shows the page with its message", async () => {
    expect((await deployer.post(`/applications/${appId}/builds/${buildId}/reject`, {})).statusCode).toBe(303);
    const rejected = await deployer.page(`/applications/${appId}/builds/${buildId}`);
    expect(rejected.body).toContain('state-rejected">rejected');
    expect(rejected.body).not.toContain("Deploy to");

    const cancel = await deployer.post(`${releaseUrl()}/cancel`, { reason: "no" });
    expect(cancel.statusCode).toBe(303);
    expect(cancel.headers.location).toBe(releaseUrl());
    const canceled = await deployer.page(releaseUrl());
    expect(canceled.body).toContain("Restore release");
    expect(canceled.body).not.toContain("Create build");
    expect((await deployer.post(`${releaseUrl()}/restore`, {})).statusCode).toBe(303);

    const created = await deployer.post(`/applications/${appId}/releases`, {
      releaseNumber: "2.0",
      pipelineName: "hostile",
    });
    expect(created.statusCode).toBe(303);
    expect(created.headers.location).toBe(`/applications/${appId}/releases/2.0`);
    const again = await deployer.post(`/applications/${appId}/releases`, {
      releaseNumber: "2.0",
      pipelineName: "hostile",
    });
    expect(again.statusCode).toBe(409);
    expect(again.body).toMatch(/<p class="error" role="alert">[^<]+<\/p>/);
    expect(again.body).toContain("<h1>WebShop</h1>");
  });
});

describe("badge link targets: a page for browsers, JSON for every other client", () => {
  let targets: string[];
  beforeAll(async () => {
    const builds = r.ok<Array<{ id: number }>>(await r.json("GET", `/api/releases/builds?applicationId=${appId}`));
    const deployments = r.ok<Array<{ id: number }>>(
      await r.json("GET", `/api/releases/builds/deployments?applicationId=${appId}`),
    );
    targets = [
      `/applications/${appId}`,
      releaseUrl(),
      `/applications/${appId}/builds/${builds[0]?.id}`,
      `/applications/${appId}/executions/${deployments[0]?.id}`,
    ];
  });

  it("answers JSON to application/json, */* and no Accept (with a key), HTML to a browser's Accept", async () => {
    for (const url of targets) {
      for (const accept of ["application/json", "*/*", undefined, "application/json, text/html;q=0.5"]) {
        const res = await t.app.inject({
          url,
          headers: { "x-apikey": t.adminKey, ...(accept !== undefined && { accept }) },
        });
        expect(res.statusCode, `${url} ${accept}`).toBe(200);
        expect(res.headers["content-type"], `${url} ${accept}`).toMatch(/^application\/json/);
      }
      const page = await viewer.page(url);
      expect(page.statusCode, url).toBe(200);
      expect(page.headers["content-type"], url).toMatch(/^text\/html/);
    }
  });

  it("never lets the session cookie authenticate the JSON answer", async () => {
    for (const url of targets) {
      for (const accept of ["application/json", "*/*", undefined]) {
        const res = await t.app.inject({
          url,
          headers: { cookie: deployer.cookie, ...(accept !== undefined && { accept }) },
        });
        expect(res.statusCode, `${url} ${accept}`).toBe(403);
        expect(res.headers["content-type"]).toMatch(/^text\/plain/);
      }
    }
  });

  it("a badge link leads a browser to the page it names", async () => {
    const link = await t.app.inject({
      url: `/api/ci-badges/link?$ApplicationId=${appId}&page=build`,
      headers: { "x-apikey": t.adminKey },
    });
    expect(link.statusCode).toBe(303);
    const path = new URL(link.headers.location as string).pathname;
    expect(path).toMatch(new RegExp(`^/applications/${appId}/builds/\\d+$`));
    const page = await viewer.page(path);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("<h1>Build 1</h1>");
  });

  it("a key in the headers still reads a page as a browser would (API credentials count on ui routes)", async () => {
    const res = await t.app.inject({
      url: `/applications/${appId}`,
      headers: { ...basic("viewer", PASSWORD), accept: BROWSER_ACCEPT },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
  });
});
