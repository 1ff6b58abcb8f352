import { readFile } from "node:fs/promises";
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
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Publishing packages in Chromium (issue 16 part A): a package uploaded through the feed page's
 * upload zone (the script's upload with its progress bar), listed, downloaded byte for byte from
 * its page, and deleted through the confirmation form; axe-core on the pages, phone width,
 * screenshots.
 */

const PASSWORD = "publisher-password-1";

let t: TestApp;
let base: string;
let browser: Browser;
let upackBytes: Buffer;

beforeAll(async () => {
  t = await buildTestApp();
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.addVersion("main", { group: "acme", name: "tool", version: "1.0.0" });
  await grant(t.database, {
    user: await createUser(t.database, "ada", PASSWORD),
    attributes: ["Admin_ConfigureProGet"],
  });
  upackBytes = await buildUpack({
    group: "acme",
    name: "fresh",
    version: "3.1.0",
    manifest: { title: "Fresh package", description: "Uploaded through the page." },
    files: { "bin/run.sh": "echo fresh" },
  });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const signedIn = (viewport?: { width: number; height: number }) =>
  signedInPage(browser, base, "ada", PASSWORD, viewport);

describe.skipIf(!chromiumInstalled())("publishing packages in Chromium", () => {
  it("uploads through the feed page, lists, downloads and deletes the package", { timeout: 60_000 }, async () => {
    const page = await signedIn();
    await page.goto(`${base}/feeds/main`);
    await expect.poll(() => page.getByText("Drop a .upack file here, or choose one.").isVisible()).toBe(true);
    await expectAccessible(page);
    await screenshot(page, "packages-feed-desktop");

    // A file that is no package: the service's refusal is told on the page, nothing is stored.
    const status = page.locator("[data-packages-status]");
    await page.getByLabel("Package file (.upack)").setInputFiles({
      name: "notes.upack",
      mimeType: "application/octet-stream",
      buffer: Buffer.from("not a zip"),
    });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect.poll(() => status.textContent()).toMatch(/^Not uploaded: ./);

    // The script's upload: the progress bar shows while the request is held, then the package's page.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route("**/ui/feeds/main/upload", async (route) => {
      await held;
      await route.continue();
    });
    await page.getByLabel("Package file (.upack)").setInputFiles({
      name: "fresh-3.1.0.upack",
      mimeType: "application/octet-stream",
      buffer: upackBytes,
    });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect.poll(() => page.locator("[data-packages-progress] progress").isVisible()).toBe(true);
    expect(await status.textContent()).toBe("Uploading fresh-3.1.0.upack…");
    await screenshot(page, "packages-uploading-desktop");
    release();
    await page.waitForURL(`${base}/feeds/main/packages/fresh?group=acme&version=3.1.0`);
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Fresh package");
    await expectAccessible(page);
    await screenshot(page, "packages-package-desktop");

    // Listed on the feed page.
    await page.goto(`${base}/feeds/main`);
    await expect.poll(() => page.getByRole("link", { name: "acme/fresh" }).count()).toBe(1);
    await page.getByRole("link", { name: "acme/fresh" }).click();

    // Downloaded from its page, byte for byte.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Download package" }).click(),
    ]);
    const path = await download.path();
    expect((await readFile(path)).equals(upackBytes)).toBe(true);

    // Deleted through the confirmation form: back on the feed page, no longer listed.
    await page.getByText("Delete version 3.1.0…").click();
    await screenshot(page, "packages-delete-desktop");
    await page.getByRole("button", { name: "Delete acme/fresh 3.1.0" }).click();
    await page.waitForURL(`${base}/feeds/main`);
    expect(await page.getByRole("link", { name: "acme/fresh" }).count()).toBe(0);
    // The one problem is the refused upload's answer, on purpose.
    expect(page.problems).toEqual([`400 for ${base}/ui/feeds/main/upload`]);
    await page.context().close();
  });

  it("uploads a package dropped on the upload zone", async () => {
    const page = await signedIn();
    await page.goto(`${base}/feeds/main/packages/tool?group=acme`);
    const dropped = await buildUpack({ group: "acme", name: "tool", version: "1.1.0" });
    // What a drag from the desktop delivers: a drop event whose DataTransfer holds the file.
    const transfer = await page.evaluateHandle(
      (bytes) => {
        const data = new DataTransfer();
        data.items.add(new File([new Uint8Array(bytes)], "tool-1.1.0.upack"));
        return data;
      },
      [...dropped],
    );
    await page.locator("[data-packages-drop]").dispatchEvent("dragover", { dataTransfer: transfer });
    await page.locator("[data-packages-drop]").dispatchEvent("drop", { dataTransfer: transfer });
    await page.waitForURL(`${base}/feeds/main/packages/tool?group=acme&version=1.1.0`);
    const listed = await t.app.inject({
      url: "/upack/main/versions?group=acme&name=tool",
      headers: { "x-apikey": t.adminKey },
    });
    expect((listed.json() as Array<{ version: string }>).map((v) => v.version).sort()).toEqual(["1.0.0", "1.1.0"]);
    expect(page.problems).toEqual([]);
    await page.context().close();
  });

  it("fits a phone's width on the feed and package pages", async () => {
    const page = await signedIn(VIEWPORTS.phone);
    for (const [url, name] of [
      ["/feeds/main", "packages-feed-phone"],
      ["/feeds/main/packages/tool?group=acme", "packages-package-phone"],
    ] as const) {
      await page.goto(`${base}${url}`);
      expect(await noSidewaysScroll(page), url).toBe(true);
      await expectAccessible(page);
      await screenshot(page, name);
    }
    expect(page.problems).toEqual([]);
    await page.context().close();
  });
});
