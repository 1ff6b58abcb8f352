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
 * A feed's retention page in Chromium (issue 17 section 5): a feed manager writes rules through the
 * form, previews, deletes exactly the preview and reads the run's log; axe-core on each page, no
 * sideways scroll at phone width, screenshots at both widths.
 */

const PASSWORD = "manager-password-1";
let t: TestApp;
let base: string;
let browser: Browser;

beforeAll(async () => {
  t = await buildTestApp();
  const upack = createUpackFixtures(t);
  await upack.createFeed("nightly-builds");
  for (const version of ["1.0.0", "1.1.0", "1.2.0", "2.0.0-rc.1"]) {
    await upack.addVersion("nightly-builds", { group: "acme/tools", name: "installer", version });
  }
  const manager = await createUser(t.database, "manager", PASSWORD);
  await grant(t.database, { user: manager, attributes: ["Admin_ManageFeed"], feed: "nightly-builds" });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe.skipIf(!chromiumInstalled())("retention in Chromium", () => {
  it("writes rules, previews, deletes the preview and shows the run", { timeout: 60_000 }, async () => {
    const page = await signedInPage(browser, base, "manager", PASSWORD);
    await page.goto(`${base}/admin/feeds/nightly-builds`);
    await page.getByRole("link", { name: "Retention" }).click();
    await page.waitForURL(`${base}/admin/feeds/nightly-builds/retention`);
    await expectAccessible(page);

    const form = page.locator("form[aria-labelledby=edit-rules]");
    await form.getByLabel(/^Rules/).fill('[{"keepVersionsCount": 2, "deleteLatestStable": true}]');
    await form.getByLabel(/^Schedule/).fill("30 2 * * 1");
    await form.getByLabel("Run on the schedule").check();
    await form.getByRole("button", { name: "Save the rules" }).click();
    await page.waitForURL(`${base}/admin/feeds/nightly-builds/retention`);
    expect(await page.locator("ol.retention-rules").textContent()).toContain("Keep the latest 2 of each package.");

    await page.getByRole("button", { name: "Preview a run" }).click();
    await page.waitForLoadState();
    expect(await page.getByRole("status").textContent()).toMatch(/A run would delete 2 of 4 versions/);
    await expectAccessible(page);
    await screenshot(page, "retention-desktop");
    await page.getByRole("button", { name: "Delete these 2 versions" }).click();
    await page.waitForURL(/\/retention\/runs\/\d+$/);
    for (let i = 0; i < 100 && !(await page.locator("dd", { hasText: /^succeeded$/ }).count()); i++) {
      await page.waitForTimeout(50);
      await page.reload();
    }
    expect(await page.locator("dd", { hasText: /^succeeded$/ }).count()).toBe(1);
    expect(await page.locator("pre.retention-log").textContent()).toContain("acme/tools/installer 1.1.0");
    await expectAccessible(page);
    await screenshot(page, "retention-run-desktop");
    const runUrl = page.url();
    expect(page.problems).toEqual([]);
    await page.context().close();

    const phone = await signedInPage(browser, base, "manager", PASSWORD, VIEWPORTS.phone);
    for (const [name, url] of [
      ["retention", `${base}/admin/feeds/nightly-builds/retention`],
      ["retention-run", runUrl],
    ] as const) {
      await phone.goto(url);
      expect(await noSidewaysScroll(phone), url).toBe(true);
      await screenshot(phone, `${name}-phone`);
    }
    expect(phone.problems).toEqual([]);
    await phone.context().close();
  });
});
