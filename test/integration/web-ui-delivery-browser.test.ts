import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import {
  chromiumInstalled,
  expectAccessible,
  launchBrowser,
  noSidewaysScroll,
  screenshot,
  signedInPage,
  VIEWPORTS,
} from "../helpers/browser.js";
import { createSystemKey, createUser, grant } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * The delivery pages in Chromium (issue 16 part C): a deployer creates a build and deploys it to the
 * next stage through the pages, and watches the execution's log grow without reloading; a badge's
 * link URL leads the browser to the page it names; axe-core on every page, phone width, screenshots.
 */

const PASSWORD = "deployer-password-1";
let t: TestApp;
let r: ReleasesFixtures;
let base: string;
let browser: Browser;
let appId: number;
let badgesKey: string;

beforeAll(async () => {
  t = await buildTestApp();
  r = releasesFixtures(t);
  appId = await r.setup("WebShop");
  r.ok(await r.json("POST", "/api/applications/update", { id: appId, description: "The <shop> front end" }));
  // Testing takes a few seconds, logging as it goes: the page must show each line as it comes.
  const step = (message: string) => ({ type: "log", message });
  const stages = [
    { name: "Integration", environmentName: "Integration", plan: [step("integrated")] },
    {
      name: "Testing",
      environmentName: "Testing",
      plan: [
        step("tests starting"),
        { type: "sleep", seconds: 2 },
        step("halfway"),
        { type: "sleep", seconds: 2 },
        step("tests done"),
      ],
    },
    { name: "Production", environmentName: "Production", plan: [step("live")] },
  ];
  r.ok(await r.json("POST", "/api/pipelines/create", { name: "slow", stages, rejectOlderBuilds: false }));
  await r.release(appId, "1.0", "slow");
  await grant(t.database, {
    user: await createUser(t.database, "deployer", PASSWORD),
    attributes: [
      "Applications_View",
      "Releases_Manage",
      "ReleasePackages_Create",
      "ReleasePackages_Deploy",
      "ReleasePackages_Manage",
    ],
  });
  badgesKey = await createSystemKey(t.database, ["ci-badges"]);
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const signedIn = (viewport?: { width: number; height: number }) =>
  signedInPage(browser, base, "deployer", PASSWORD, viewport);

/** The pages visited by the flow, for the phone-width pass. */
const visited: Array<[string, string]> = [];

describe.skipIf(!chromiumInstalled())("delivery in Chromium", () => {
  it("creates a build and deploys it through the pages, the log updating live", { timeout: 60_000 }, async () => {
    const page = await signedIn();
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Applications" }).click();
    await page.waitForURL(`${base}/applications`);
    await expectAccessible(page);
    await screenshot(page, "delivery-applications-desktop");
    visited.push(["/applications", "delivery-applications-phone"]);

    await page.getByRole("link", { name: "WebShop" }).click();
    await page.waitForURL(`${base}/applications/${appId}`);
    await expect.poll(() => page.locator("dl.facts").textContent()).toContain("The <shop> front end");
    await expect
      .poll(() => page.locator("img.badge").evaluate((img: HTMLImageElement) => img.naturalWidth))
      .toBeGreaterThan(0);
    await expectAccessible(page);
    await screenshot(page, "delivery-application-desktop");
    visited.push([`/applications/${appId}`, "delivery-application-phone"]);

    await page.getByLabel("Release", { exact: true }).selectOption("1.0");
    await page.getByRole("button", { name: "Create build" }).click();
    await page.waitForURL(new RegExp(`/applications/${appId}/builds/\\d+$`));
    const buildPath = new URL(page.url()).pathname;
    visited.push([buildPath, "delivery-build-phone"]);
    // The first stage runs at once; reload until the build stands after it.
    await expect
      .poll(async () => {
        await page.reload();
        return page.getByRole("button", { name: "Deploy to Testing" }).count();
      })
      .toBe(1);
    await expectAccessible(page);
    await screenshot(page, "delivery-build-desktop");

    await page.getByRole("button", { name: "Deploy to Testing" }).click();
    await page.waitForURL(new RegExp(`/applications/${appId}/executions/\\d+$`));
    const executionPath = new URL(page.url()).pathname;
    visited.push([executionPath, "delivery-execution-phone"]);
    // Marks this document: a reload would lose it, so the lines below arrive without one.
    await page.evaluate(() => Object.assign(window, { sameDocument: true }));
    const log = page.locator("pre.log");
    await expect.poll(() => log.textContent(), { timeout: 15_000 }).toContain("halfway");
    expect(await log.textContent()).not.toContain("tests done");
    await expectAccessible(page);
    await screenshot(page, "delivery-execution-running-desktop");
    await expect.poll(() => log.textContent(), { timeout: 15_000 }).toContain("tests done");
    await expect.poll(() => page.locator("[data-delivery-status] .state").textContent()).toBe("succeeded");
    expect(await page.evaluate(() => (window as { sameDocument?: boolean }).sameDocument)).toBe(true);
    await expect
      .poll(() => page.locator("[data-delivery-hint]").textContent())
      .toBe("The deployment ended: succeeded.");
    await screenshot(page, "delivery-execution-desktop");

    await page.getByRole("link", { name: "Build 1" }).click();
    await page.waitForURL(`${base}${buildPath}`);
    await expect.poll(() => page.getByRole("button", { name: "Deploy to Production" }).count()).toBe(1);

    await page.getByRole("link", { name: "Release 1.0" }).click();
    await page.waitForURL(`${base}/applications/${appId}/releases/1.0`);
    await expectAccessible(page);
    await screenshot(page, "delivery-release-desktop");
    visited.push([`/applications/${appId}/releases/1.0`, "delivery-release-phone"]);
    expect(page.problems).toEqual([]);
    await page.context().close();
  });

  it("follows a badge's link URL to the page it names", async () => {
    const page = await signedIn();
    for (const [kind, path] of [
      ["application", new RegExp(`^/applications/${appId}$`)],
      ["release", new RegExp(`^/applications/${appId}/releases/1\\.0$`)],
      ["build", new RegExp(`^/applications/${appId}/builds/\\d+$`)],
      ["execution", new RegExp(`^/applications/${appId}/executions/\\d+$`)],
    ] as const) {
      const res = await page.goto(`${base}/api/ci-badges/link?key=${badgesKey}&$ApplicationId=${appId}&page=${kind}`);
      expect(res?.status(), kind).toBe(200);
      expect(res?.headers()["content-type"], kind).toMatch(/^text\/html/);
      expect(new URL(page.url()).pathname, kind).toMatch(path);
      expect(await page.getByRole("heading", { level: 1 }).textContent(), kind).toMatch(
        /WebShop|1\.0|Build 1|Deployment #/,
      );
    }
    expect(page.problems).toEqual([]);
    await page.context().close();
  });

  it("fits a phone's width", async () => {
    const page = await signedIn(VIEWPORTS.phone);
    expect(visited.length).toBe(5);
    for (const [path, name] of visited) {
      await page.goto(`${base}${path}`);
      expect(await noSidewaysScroll(page), path).toBe(true);
      await expectAccessible(page);
      await screenshot(page, name);
    }
    expect(page.problems).toEqual([]);
    await page.context().close();
  });
});
