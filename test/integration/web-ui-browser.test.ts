import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import {
  chromiumInstalled,
  freshPage as freshPageOf,
  expectAccessible,
  launchBrowser,
  screenshot,
  seriousAxeViolations,
  signInThroughForm,
  VIEWPORTS,
  type WatchedPage,
} from "../helpers/browser.js";
import { createUser, grant } from "../helpers/fixtures.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * The web UI in a real browser (issue 16 section 3): Debian's Chromium driven by playwright-core
 * against the app listening on loopback. Signing in and out, a wrong password, browsing a feed and
 * a package, hostile package metadata shown as text (no script runs), axe-core on every page, and
 * screenshots at desktop and phone width under test-output/screenshots/.
 */

const HOSTILE = `<script>window.__pwned = 1</script>`;
/** Titles are at most 50 characters (upack.json rules); the description takes the longer attack. */
const HOSTILE_IMAGE = `<img src=x onerror="window.__pwned = 2">`;

let t: TestApp;
let base: string;
let browser: Browser;

beforeAll(async () => {
  t = await buildTestApp();
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await grant(t.database, {
    user: await createUser(t.database, "alice", "alice-password-1"),
    attributes: ["Feeds_ViewFeed"],
  });
  await grant(t.database, {
    user: await createUser(t.database, "ada", "ada-password-1"),
    attributes: ["Admin_ConfigureProGet"],
  });
  for (const version of ["1.0.0", "1.1.0"]) {
    const res = await t.app.inject({
      method: "PUT",
      url: "/upack/main/upload",
      headers: { "x-apikey": t.adminKey },
      payload: await buildUpack({
        group: "acme/tools",
        name: "widget",
        version,
        manifest: { title: `W ${HOSTILE}`, description: `Makes widgets. ${HOSTILE} ${HOSTILE_IMAGE}` },
      }),
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const problemsOf = (page: WatchedPage) => page.problems;
const freshPage = (viewport?: { width: number; height: number }) => freshPageOf(browser, viewport);

const signIn = (page: Page, user: string, password: string) => signInThroughForm(page, base, user, password);

describe.skipIf(!chromiumInstalled())("web UI in Chromium", () => {
  it("signs in after a wrong password, shows who is signed in, and signs out", async () => {
    const page = await freshPage();
    await signIn(page, "alice", "not-her-password");
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/.+/);
    expect(new URL(page.url()).pathname).toBe("/sign-in");
    await expectAccessible(page);
    await screenshot(page, "sign-in-desktop");

    await signIn(page, "alice", "alice-password-1");
    await page.waitForURL(`${base}/feeds`);
    expect(await page.locator("header").textContent()).toContain("Signed in as alice");
    await expectAccessible(page);
    await screenshot(page, "feeds-desktop");

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${base}/feeds`);
    expect(await page.locator("header").getByRole("link", { name: "Sign in" }).count()).toBe(1);
    const cookies = await page.context().cookies();
    expect(cookies.find((cookie) => cookie.name === "wharf_session")).toBeUndefined();
    expect(problemsOf(page)).toEqual([]);
    await page.context().close();
  });

  it("browses a feed and a package, rendering hostile metadata as text with no script run", async () => {
    const page = await freshPage();
    await signIn(page, "alice", "alice-password-1");
    await page.waitForURL(`${base}/feeds`);
    await page.getByRole("link", { name: "main", exact: true }).click();
    await page.waitForURL(`${base}/feeds/main`);
    await expectAccessible(page);
    await screenshot(page, "feed-desktop");

    await page.getByRole("link", { name: "widget" }).first().click();
    await page.waitForURL(/\/feeds\/main\/packages\//);
    const text = (await page.locator("main").textContent()) ?? "";
    expect(text).toContain("1.1.0");
    expect(text).toContain("1.0.0");
    // The hostile strings are there, as text ...
    expect(text).toContain("<script>window.__pwned = 1</script>");
    // ... and nothing of them ran or became an element.
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator("main script, main img[onerror]").count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, "package-desktop");
    expect(problemsOf(page)).toEqual([]);
    await page.context().close();
  });

  it("fits a phone's width: the pages keep their content without sideways scrolling", async () => {
    const page = await freshPage(VIEWPORTS.phone);
    await signIn(page, "alice", "alice-password-1");
    await page.waitForURL(`${base}/feeds`);
    for (const [path, name] of [
      ["/feeds", "feeds-phone"],
      ["/feeds/main", "feed-phone"],
    ] as const) {
      await page.goto(`${base}${path}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, path).toBeLessThanOrEqual(0);
      expect(await seriousAxeViolations(page), path).toEqual([]);
      await screenshot(page, name);
    }
    await page.goto(`${base}/sign-in`);
    await screenshot(page, "sign-in-phone");
    expect(problemsOf(page)).toEqual([]);
    await page.context().close();
  });

  it("lets an administrator create an API key, shown once and working, and revoke it; a viewer sees no buttons", async () => {
    const page = await freshPage();
    await signIn(page, "ada", "ada-password-1");
    await page.waitForURL(`${base}/feeds`);
    await page.goto(`${base}/admin/api-keys`);
    await expectAccessible(page);
    await page.getByLabel("Display name").fill("Build agent <b>7</b>");
    await page.getByLabel("metrics").check();
    await page.getByRole("button", { name: "Create key" }).click();
    await page.waitForURL(`${base}/admin/api-keys`);
    const key = ((await page.locator("#new-key").textContent()) ?? "").trim();
    expect(key.length).toBeGreaterThanOrEqual(20);
    await expectAccessible(page);
    await screenshot(page, "api-key-created-desktop");
    const metrics = await fetch(`${base}/metrics`, { headers: { "X-ApiKey": key } });
    expect(metrics.status).toBe(200);
    await metrics.arrayBuffer();

    // The list never shows the key again; revoking it makes it worthless.
    await page.goto(`${base}/admin/api-keys`);
    expect(await page.content()).not.toContain(key);
    await page.getByRole("button", { name: "Revoke Build agent <b>7</b>" }).click();
    await page.waitForURL(`${base}/admin/api-keys`);
    const refused = await fetch(`${base}/metrics`, { headers: { "X-ApiKey": key } });
    expect(refused.status).toBe(403);
    await refused.arrayBuffer();
    expect(problemsOf(page)).toEqual([]);
    await page.context().close();

    const viewer = await freshPage();
    await signIn(viewer, "alice", "alice-password-1");
    await viewer.waitForURL(`${base}/feeds`);
    const answer = await viewer.goto(`${base}/admin/api-keys`);
    expect(answer?.status()).toBe(403);
    expect(await viewer.getByRole("button", { name: /Revoke|Create key/ }).count()).toBe(0);
    await viewer.context().close();
  });
});
