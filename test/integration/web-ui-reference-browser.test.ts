import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import {
  chromiumInstalled,
  expectAccessible,
  noSidewaysScroll,
  freshPage,
  launchBrowser,
  screenshot,
  signInThroughForm,
  VIEWPORTS,
  type WatchedPage,
} from "../helpers/browser.js";
import { createUser, grant } from "../helpers/fixtures.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Part F's pages in Chromium (issue 16): the native API reference in the web UI's frame (list and
 * one method, read by Anonymous and by a signed-in reader) and the feeds list with its totals,
 * an asset directory's link leading to its file browser. axe-core on every page, no sideways
 * scrolling at phone width, nothing refused by the CSP, screenshots at both widths.
 */
const PASSWORD = "ada-password-1";
let t: TestApp;
let base: string;
let browser: Browser;

beforeAll(async () => {
  t = await buildTestApp();
  await grant(t.database, { user: await createUser(t.database, "ada", PASSWORD), attributes: ["Feeds_ViewFeed"] });
  const upack = createUpackFixtures(t);
  await upack.createFeed("main");
  await upack.addVersion("main", { name: "tool", version: "1.0.0", files: { "a.txt": "A" } });
  await createAssetDirectory(t, "files");
  expect((await putAsset(t, "files", "readme.txt", "hello", { "content-type": "text/plain" })).statusCode).toBe(201);
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function fitsAndIsAccessible(page: WatchedPage, shot: string): Promise<void> {
  await expectAccessible(page);
  expect(await noSidewaysScroll(page), `${shot}: no sideways scrolling`).toBe(true);
  // The UI's stylesheet applied (the reference no longer brings its own).
  expect(await page.evaluate(() => getComputedStyle(document.body).marginTop)).toBe("0px");
  await screenshot(page, shot);
  expect(page.problems).toEqual([]);
}

describe.skipIf(!chromiumInstalled())("part F in a browser", () => {
  for (const [width, viewport] of Object.entries(VIEWPORTS)) {
    it(`the reference list and a method page, for Anonymous (${width})`, async () => {
      const page = await freshPage(browser, viewport);
      try {
        await page.goto(`${base}/reference/api`);
        await expect(page.getByRole("heading", { level: 1, name: "Native API reference" }).isVisible()).resolves.toBe(
          true,
        );
        await expect(page.getByRole("link", { name: "Sign in" }).isVisible()).resolves.toBe(true);
        await fitsAndIsAccessible(page, `reference-list-${width}`);
        // The method's own page, from its section's heading (the index links to the section).
        await page.locator('h2 a[href="/reference/api/Feeds_GetFeeds"]').click();
        await page.waitForURL(`${base}/reference/api/Feeds_GetFeeds`);
        await expect(page.getByRole("heading", { level: 1, name: "Feeds_GetFeeds" }).isVisible()).resolves.toBe(true);
        await fitsAndIsAccessible(page, `reference-method-${width}`);
      } finally {
        await page.context().close();
      }
    }, 120_000);
  }

  it("a signed-in reader sees themself in the reference's frame; the feeds list leads to the file browser", async () => {
    for (const [width, viewport] of Object.entries(VIEWPORTS)) {
      const page = await freshPage(browser, viewport);
      try {
        await signInThroughForm(page, base, "ada", PASSWORD);
        await page.waitForURL(`${base}/feeds`);
        const row = page.getByRole("row", { name: /files/ });
        await expect(row.textContent()).resolves.toMatch(/asset directory\s*1 file\s*5 B/);
        await fitsAndIsAccessible(page, `feeds-list-${width}`);
        await page.goto(`${base}/reference/api/no_such_method`);
        await expect(page.getByRole("heading", { level: 1, name: "No such method" }).isVisible()).resolves.toBe(true);
        await expect(page.getByText("Signed in as").isVisible()).resolves.toBe(true);
        await fitsAndIsAccessible(page, `reference-404-${width}`);
        await page.goto(`${base}/feeds`);
        await page.getByRole("link", { name: "files", exact: true }).click();
        await page.waitForURL(`${base}/assets/files/`);
      } finally {
        await page.context().close();
      }
    }
  }, 120_000);
});
