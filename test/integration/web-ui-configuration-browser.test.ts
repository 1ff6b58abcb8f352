import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  chromiumInstalled,
  expectAccessible,
  launchBrowser,
  screenshot,
  signedInPage,
  VIEWPORTS,
} from "../helpers/browser.js";
import { checked, type ConfigurationWorld, configurationWorld, localServer, role } from "../helpers/configuration.js";
import { createUser, grant } from "../helpers/fixtures.js";

/**
 * The configuration pages in Chromium (issue 16 part D): the overview, a drifted server with what
 * differs, a check started from its page, a simulated remediation scheduled a few seconds ahead
 * whose page updates itself until the job has run (its log shown, a hostile file name as text),
 * then a real one leaving the server current; axe-core on every page, phone width, screenshots.
 */

const PASSWORD = "mona-password-1";
const HOSTILE_PATH = `/srv/<img src=x onerror=alert(1)>.txt`;

let w: ConfigurationWorld;
let base: string;
let browser: Browser;

beforeAll(async () => {
  w = await configurationWorld();
  await role(w, "web", {
    items: [
      { type: "file", path: "/srv/site/index.html", content: "<h1>hello</h1>\n", mode: "0644" },
      { type: "file", path: HOSTILE_PATH, content: "x\n", mode: "0644" },
    ],
  });
  expect((await w.admin("/api/infrastructure/environments/create/Prod", {})).statusCode).toBe(201);
  await localServer(w, "web1", { roles: ["web"], environments: ["Prod"] });
  await localServer(w, "db1", {});
  expect((await checked(w, "web1")).status).toBe("drifted");
  await grant(w.t.database, {
    user: await createUser(w.t.database, "mona", PASSWORD),
    attributes: ["Infrastructure_View", "Infrastructure_Manage"],
  });
  await w.t.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(w.t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await w?.close();
});

const signedIn = (viewport?: { width: number; height: number }) =>
  signedInPage(browser, base, "mona", PASSWORD, viewport);

/** `yyyy-MM-ddTHH:mm:ss` in UTC, what the start field takes. */
const utcField = (date: Date) => date.toISOString().slice(0, 19);

describe.skipIf(!chromiumInstalled())("configuration pages in Chromium", () => {
  it("walks from the overview to a drifted server, checks it, and remediates it (simulated, then for real)", async () => {
    const page = await signedIn();
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Configuration" }).click();
    await page.waitForURL(`${base}/configuration`);
    await expect.poll(() => page.locator("tr", { hasText: "web1" }).first().innerText()).toContain("Drifted");
    await expectAccessible(page);
    await screenshot(page, "configuration-overview-desktop");

    await page.getByRole("link", { name: "web1" }).first().click();
    await page.waitForURL(`${base}/configuration/servers/web1`);
    const items = page.getByRole("table", { name: "Items of the last completed check" });
    // The hostile name is a file name on the page, not an image.
    await expect.poll(() => items.innerText()).toContain(HOSTILE_PATH);
    expect(await page.locator("main img").count()).toBe(0);
    expect(await items.innerText()).toMatch(/exists: true → false/);
    await expectAccessible(page);
    await screenshot(page, "configuration-server-drifted-desktop");

    await page.getByRole("button", { name: "Check this server now" }).click();
    await page.waitForURL(`${base}/configuration/servers/web1?checked`);
    expect(await page.getByRole("status").innerText()).toContain("Check started");

    // A simulated remediation a few seconds ahead: its page shows it pending, then (without a
    // reload: the page's script fetches it again) completed with what would change.
    await page.getByLabel("Job name (optional)").fill("Dry run <b>1</b>");
    await page.getByLabel("Not before (UTC, optional: empty is now)").fill(utcField(new Date(Date.now() + 3_000)));
    await page.getByLabel(/Simulate/).check();
    await page.getByRole("button", { name: "Remediate" }).click();
    await page.waitForURL(/\/configuration\/jobs\/\d+$/);
    expect(await page.locator("h1").innerText()).toBe("Dry run <b>1</b>");
    expect(await page.locator(".config-state").innerText()).toBe("Pending");
    await expectAccessible(page);
    await page.locator(".config-state", { hasText: "Completed" }).waitFor({ timeout: 20_000 });
    const log = await page.locator(".config-log").innerText();
    expect(log).toContain("nothing was changed");
    expect(log).toContain(HOSTILE_PATH);
    await expectAccessible(page);
    await screenshot(page, "configuration-job-desktop");

    await page.getByRole("link", { name: "web1" }).click();
    await page.getByRole("button", { name: "Remediate" }).click();
    await page.waitForURL(/\/configuration\/jobs\/\d+$/);
    await page.locator(".config-state", { hasText: "Completed" }).waitFor({ timeout: 20_000 });
    await page.getByRole("link", { name: "web1" }).click();
    await expect.poll(() => page.locator("dl.facts .config-status").innerText()).toBe("Current");
    expect(await page.locator("main").innerText()).toContain("0 of 2 items differ");
    await screenshot(page, "configuration-server-current-desktop");

    for (const url of ["/configuration/roles/web", "/configuration/environments/Prod"]) {
      await page.goto(`${base}${url}`);
      expect(await page.locator("main").innerText()).toContain("web1");
      await expectAccessible(page);
    }
    await screenshot(page, "configuration-environment-desktop");
    expect(page.problems).toEqual([]);
    await page.context().close();
  }, 90_000);

  it("fits a phone's width on every page", async () => {
    const page = await signedIn(VIEWPORTS.phone);
    const jobId = (w.t.db.prepare("SELECT max(job_id) AS id FROM config_remediations").get() as { id: number }).id;
    for (const [url, name] of [
      ["/configuration", "overview"],
      ["/configuration/servers/web1", "server"],
      ["/configuration/roles/web", "role"],
      ["/configuration/environments/Prod", "environment"],
      [`/configuration/jobs/${jobId}`, "job"],
    ] as const) {
      await page.goto(`${base}${url}`);
      const overflow = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      expect(overflow, url).toBeLessThanOrEqual(0);
      await expectAccessible(page);
      await screenshot(page, `configuration-${name}-phone`);
    }
    expect(page.problems).toEqual([]);
    await page.context().close();
  }, 60_000);
});
