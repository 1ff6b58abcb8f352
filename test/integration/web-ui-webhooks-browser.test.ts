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
import { type Receiver, startReceiver } from "../helpers/webhook-receiver.js";

/**
 * The webhooks pages in Chromium (issue 17 section 5): an administrator creates a webhook through
 * the form, sees its secret once, sends a test event and finds it in the delivery log; axe-core on
 * both pages, no sideways scroll at phone width, screenshots at both widths.
 */

const PASSWORD = "root-password-1";
let t: TestApp;
let base: string;
let browser: Browser;
let receiver: Receiver;

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_FETCH_ALLOW_PRIVATE: "true" } });
  await createUpackFixtures(t).createFeed("public-tools");
  await grant(t.database, {
    user: await createUser(t.database, "root", PASSWORD),
    attributes: ["Admin_ConfigureProGet"],
  });
  receiver = await startReceiver();
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await receiver?.close();
});

describe.skipIf(!chromiumInstalled())("webhooks in Chromium", () => {
  it("creates a webhook, shows its secret once, tests it and logs the delivery", { timeout: 60_000 }, async () => {
    const page = await signedInPage(browser, base, "root", PASSWORD);
    await page.goto(`${base}/admin`);
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.waitForURL(`${base}/admin/webhooks`);
    await expectAccessible(page);
    const create = page.locator("form[aria-labelledby=new-webhook]");
    await create.getByLabel("Feed", { exact: true }).selectOption("public-tools");
    await create.getByLabel("Name", { exact: true }).fill("release notifier for the public tools feed");
    await create.getByLabel(/^URL/).fill(`${receiver.base}/hooks/{feed}/{name}/{version}?event={event}`);
    await create.getByLabel("package.deleted").uncheck();
    await create.getByLabel(/Extra headers/).fill("X-Routing-Key: releases");
    await create.getByRole("button", { name: "Create webhook" }).click();
    await page.waitForURL(`${base}/admin/webhooks`);
    const secret = await page.locator("code").textContent();
    expect(secret).toMatch(/^whsec_/);
    await expectAccessible(page);

    await page.getByRole("button", { name: "Send a test event" }).click();
    await page.waitForURL(/\/admin\/webhooks\/\d+\?tested=\d+$/);
    expect(await page.getByRole("status").textContent()).toMatch(/^Test: succeeded, HTTP 200/);
    expect(await page.locator("code").count()).toBe(0); // the secret is not shown again
    expect(receiver.received.at(-1)?.url).toBe("/hooks/public-tools//?event=ping");
    expect(receiver.received.at(-1)?.headers["x-routing-key"]).toBe("releases");
    await page.getByText("Body", { exact: false }).first().click();
    expect(await page.locator("pre").first().textContent()).toContain('"event": "ping"');
    await expectAccessible(page);
    await screenshot(page, "webhook-desktop");
    const detail = page.url();
    await page.goto(`${base}/admin/webhooks`);
    await screenshot(page, "webhooks-desktop");
    expect(page.problems).toEqual([]);
    await page.context().close();

    const phone = await signedInPage(browser, base, "root", PASSWORD, VIEWPORTS.phone);
    for (const [name, url] of [
      ["webhooks", `${base}/admin/webhooks`],
      ["webhook", detail],
    ] as const) {
      await phone.goto(url);
      expect(await noSidewaysScroll(phone), url).toBe(true);
      await screenshot(phone, `${name}-phone`);
    }
    expect(phone.problems).toEqual([]);
    await phone.context().close();
  });
});
