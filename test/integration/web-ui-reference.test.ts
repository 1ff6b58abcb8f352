import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NATIVE_METHODS } from "../../src/areas/native/index.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createUser } from "../helpers/fixtures.js";
import { UiClient } from "../helpers/ui-client.js";

/**
 * The native API reference inside the web UI (issue 16 section 1; web-ui/reference): the UI's frame,
 * stylesheet and Content-Security-Policy around the reference's content, public, HEAD, letter-case
 * free method names, a 404 page in the frame, and caching that never shares one reader's page
 * (the frame names who is signed in). The reference's content itself: native-reference.test.ts.
 */
let t: TestApp;
const HOSTILE_USER = `<img src=x onerror=alert(1)>`;

beforeAll(async () => {
  t = await buildTestApp();
  await createUser(t.database, HOSTILE_USER, "hostile-password");
});
afterAll(async () => t.close());

function get(url: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: "GET", url, headers });
}

/** The UI's frame, stylesheet and script, and the UI's policy (no inline anything). */
function expectUiPage(res: LightMyRequestResponse): void {
  expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
  expect(res.body).toContain('<header class="top">');
  expect(res.body).toContain('<a href="/feeds">Feeds</a>');
  expect(res.body).toMatch(/<link rel="stylesheet" href="\/ui\/style\.css\?v=[0-9a-f]+">/);
  expect(res.body).toMatch(/<script src="\/ui\/app\.js\?v=[0-9a-f]+" defer><\/script>/);
  expect(res.body).not.toMatch(/<style\b/);
  const csp = String(res.headers["content-security-policy"]);
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).not.toMatch(/unsafe-inline|sha256-/);
  expect(res.headers["x-frame-options"]).toBe("DENY");
  expect(res.headers["x-content-type-options"]).toBe("nosniff");
}

describe("/reference/api in the web UI", () => {
  it("shows the list of methods in the frame, to Anonymous, with a sign-in link", async () => {
    const res = await get("/reference/api");
    expect(res.statusCode).toBe(200);
    expectUiPage(res);
    expect(res.body).toContain("<title>Native API reference · Wharf</title>");
    expect(res.body).toContain('<a href="/sign-in">Sign in</a>');
    expect(res.body).toContain('<div class="reference"><h1>Native API reference</h1>');
    expect(res.body.match(/<section /g)).toHaveLength(NATIVE_METHODS.length);
  });

  it("answers HEAD with the GET's headers and no body", async () => {
    const full = await get("/reference/api/Feeds_GetFeeds");
    const head = await t.app.inject({ method: "HEAD", url: "/reference/api/Feeds_GetFeeds" });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe("");
    expect(head.headers.etag).toBe(full.headers.etag);
    expect(head.headers["content-security-policy"]).toBe(full.headers["content-security-policy"]);
  });

  it("finds a method in any letter case and shows its canonical name", async () => {
    const res = await get("/reference/api/FEEDS_getfeeds");
    expect(res.statusCode).toBe(200);
    expectUiPage(res);
    expect(res.body).toContain("<h1><code>Feeds_GetFeeds</code></h1>");
    expect(res.body).toContain("<title>Feeds_GetFeeds - Native API reference · Wharf</title>");
    expect(res.body).toContain('<nav aria-label="Breadcrumb" class="breadcrumbs"><a href="/reference/api">');
  });

  it("answers an unknown method with a 404 page in the frame, not cached, HEAD too", async () => {
    const res = await get("/reference/api/No_Such_Method");
    expect(res.statusCode).toBe(404);
    expectUiPage(res);
    expect(res.body).toContain("<h1>No such method</h1>");
    expect(res.headers.etag).toBeUndefined();
    expect(res.headers["cache-control"]).toBe("private, no-cache");
    const head = await t.app.inject({ method: "HEAD", url: "/reference/api/No_Such_Method" });
    expect(head.statusCode).toBe(404);
    expect(head.body).toBe("");
  });

  it("an unknown method's name from the URL is never shown, so never run", async () => {
    const res = await get(`/reference/api/${encodeURIComponent("<script>alert(1)</script>")}`);
    expect(res.statusCode).toBe(404);
    expect(res.body).not.toContain("<script>alert");
    expect(res.body).not.toContain("alert(1)");
  });

  it("without a session: the same bytes each time, revalidated to a 304; no shared cache keeps it", async () => {
    const first = await get("/reference/api");
    const second = await get("/reference/api");
    expect(first.headers["cache-control"]).toBe("private, no-cache");
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(second.headers.etag).toBe(etag);
    const revalidated = await get("/reference/api", { "if-none-match": etag });
    expect(revalidated.statusCode).toBe(304);
    expect(revalidated.body).toBe("");
    const stale = await get("/reference/api", { "if-none-match": '"something-else"' });
    expect(stale.statusCode).toBe(200);
  });

  it("signed in: the frame names the reader (escaped), and their page is neither shared nor the anonymous one", async () => {
    const anonymous = await get("/reference/api");
    const reader = new UiClient(t);
    await reader.signIn(HOSTILE_USER, "hostile-password");
    const res = await reader.get("/reference/api");
    expect(res.statusCode).toBe(200);
    expectUiPage(res);
    expect(res.body).toContain("Signed in as <strong>&lt;img src=x onerror=alert(1)&gt;</strong>");
    expect(res.body).not.toContain(HOSTILE_USER);
    expect(res.body).toMatch(/<meta name="csrf-token" content="[^"]+">/);
    expect(res.headers["cache-control"]).toBe("private, no-cache");
    expect(res.headers.etag).not.toBe(anonymous.headers.etag);
    // The anonymous page's validator does not answer a signed-in reader with a 304 of that page.
    const cookie = [...reader.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const revalidated = await get("/reference/api", { cookie, "if-none-match": String(anonymous.headers.etag) });
    expect(revalidated.statusCode).toBe(200);
    expect(revalidated.body).toContain("Signed in as");
  });

  it("is public: a wrong key is not even looked at", async () => {
    const res = await get("/reference/api?key=wrong", { "x-apikey": "wrong" });
    expect(res.statusCode).toBe(200);
  });
});
