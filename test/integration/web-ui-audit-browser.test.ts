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
import { createUser, grant } from "../helpers/fixtures.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * The audit log page in Chromium (issue 17 section 5): an administrator finds a refused request
 * and a change by filtering; axe-core, no sideways scroll at phone width, screenshots.
 */

const PASSWORD = "root-password-1";
let t: TestApp;
let base: string;
let browser: Browser;

beforeAll(async () => {
  t = await buildTestApp();
  await createUpackFixtures(t).createFeed("release-candidates-of-the-storefront");
  await grant(t.database, {
    user: await createUser(t.database, "root", PASSWORD),
    attributes: ["Admin_ConfigureProGet"],
  });
  // A refused delete by a key that does not exist, and a change that worked.
  await t.app.inject({
    method: "DELETE",
    url: "/api/management/feeds/delete/nope",
    headers: { "x-apikey": "not-a-key-at-all" },
  });
  await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/update/release-candidates-of-the-storefront",
    headers: { "x-apikey": t.adminKey },
    payload: { description: "what QA signed off" },
  });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe.skipIf(!chromiumInstalled())("the audit log in Chromium", () => {
  it("filters records by action and shows who did what", { timeout: 60_000 }, async () => {
    const page = await signedInPage(browser, base, "root", PASSWORD);
    await page.goto(`${base}/admin`);
    await page.getByRole("link", { name: "Audit log" }).click();
    await page.waitForURL(`${base}/admin/audit`);
    await expectAccessible(page);
    await page.getByLabel("Action", { exact: false }).first().fill("POST /api/management/feeds/update");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/\/admin\/audit\?/);
    const rows = page.locator("tbody tr");
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain("name=release-candidates-of-the-storefront");
    await expectAccessible(page);
    await screenshot(page, "audit-desktop");
    expect(page.problems).toEqual([]);
    await page.context().close();

    const phone = await signedInPage(browser, base, "root", PASSWORD, VIEWPORTS.phone);
    await phone.goto(`${base}/admin/audit`);
    expect(await phone.locator("tbody tr").count()).toBeGreaterThanOrEqual(2);
    expect(await noSidewaysScroll(phone)).toBe(true);
    await screenshot(phone, "audit-phone");
    expect(phone.problems).toEqual([]);
    await phone.context().close();
  });
});
