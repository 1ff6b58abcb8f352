import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
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

/**
 * The asset directory file browser in Chromium (issue 16 part B): browsing, text and image
 * previews, an upload through the page (the multipart protocol with its progress bar), a new
 * folder, a delete with its confirmation; a hostile HTML file runs no script in the UI's origin,
 * in the preview frame or opened directly; axe-core on every page, phone width, screenshots.
 */

/** A 2x2 red PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAwMAAAB3mAf8zX4O8AAAAAElFTkSuQmCC",
  "base64",
);
/** Inline script, an event handler, and a script from this origin (which the UI's own CSP would allow). */
const HOSTILE_HTML =
  `<h1>hostile</h1><script>alert("ran"); top.document.title = "pwned"; top.__pwned = 1;</script>` +
  `<img src=x onerror="alert('img')"><script src="evil.js"></script>`;
const HOSTILE_SVG =
  `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><script>alert("svg"); top.__pwned = 1;</script>` +
  `<text x="4" y="24">hostile svg</text></svg>`;
const HOSTILE_JS = `alert("js"); document.title = "pwned"; top.__pwned = 1;`;
const PASSWORD = "ada-password-1";

let t: TestApp;
let base: string;
let browser: Browser;

beforeAll(async () => {
  t = await buildTestApp();
  await createAssetDirectory(t, "files");
  await grant(t.database, {
    user: await createUser(t.database, "ada", PASSWORD),
    attributes: ["Admin_ConfigureProGet"],
  });
  for (const [path, body, type] of [
    ["docs/readme.txt", "Hello from <b>Wharf</b>\nsecond line", "text/plain"],
    ["images/red.png", PNG, "image/png"],
    ["old.txt", "to be deleted", "text/plain"],
  ] as const) {
    const res = await putAsset(t, "files", path, body, { "content-type": type });
    expect(res.statusCode, res.body).toBe(201);
  }
  // A static site: the API serves its HTML as is (no sandbox), so only the web UI's own headers protect it.
  await createAssetDirectory(t, "www", { staticSite: true });
  for (const [path, body, type] of [
    ["site/evil.html", HOSTILE_HTML, "text/html"],
    ["site/evil.js", HOSTILE_JS, "text/javascript"],
    ["site/evil.svg", HOSTILE_SVG, "image/svg+xml"],
  ] as const) {
    expect((await putAsset(t, "www", path, body, { "content-type": type })).statusCode).toBe(201);
  }
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

describe.skipIf(!chromiumInstalled())("asset directories in Chromium", () => {
  it("browses folders through links and breadcrumbs, previews text and an image", async () => {
    const page = await signedIn();
    await page.goto(`${base}/assets/files/`);
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("files");
    await expectAccessible(page);
    await screenshot(page, "assets-folder-desktop");

    await page.getByRole("link", { name: "docs/" }).click();
    await page.getByRole("link", { name: "readme.txt" }).click();
    expect(new URL(page.url()).pathname).toBe("/assets/files/docs/readme.txt");
    await expect.poll(() => page.locator("pre.asset-text").textContent()).toBe("Hello from <b>Wharf</b>\nsecond line");
    await expectAccessible(page);
    await screenshot(page, "assets-text-desktop");
    await page.getByRole("navigation", { name: "Breadcrumb" }).getByRole("link", { name: "docs" }).click();
    expect(new URL(page.url()).pathname).toBe("/assets/files/docs/");

    await page.goto(`${base}/assets/files/images/red.png`);
    const image = page.getByRole("img", { name: "Preview of red.png" });
    await expect.poll(() => image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(2);
    await expectAccessible(page);
    expect(page.problems).toEqual([]);
    await page.context().close();
  });

  it("shows hostile HTML and SVG only in a sandbox: no script runs, in the frame or opened directly", async () => {
    const page = await signedIn();
    await page.goto(`${base}/assets/www/site/evil.html`);
    const frame = page.frameLocator("iframe.asset-frame");
    // The frame did load the file (the UI may frame it), and rendered its markup without its scripts.
    await expect.poll(() => frame.getByRole("heading", { name: "hostile" }).count()).toBe(1);
    await page.waitForTimeout(300);
    expect(await page.title()).toBe("evil.html · Wharf");
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await expectAccessible(page);
    await screenshot(page, "assets-sandboxed-desktop");

    // An SVG the same: framed, sandboxed.
    await page.goto(`${base}/assets/www/site/evil.svg`);
    await expect.poll(() => frame.getByText("hostile svg").count()).toBe(1);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();

    // Opened as pages of their own: an opaque origin, no script, no access to the UI's cookies.
    for (const name of ["evil.html", "evil.svg"]) {
      await page.goto(`${base}/ui/endpoints/www/content/site/${name}`);
      await page.waitForTimeout(300);
      expect(await page.title()).not.toBe("pwned");
      expect(await page.evaluate(() => window.origin)).toBe("null");
    }
    // Chromium reports each blocked script as a console error; no dialog opened.
    expect(page.problems.filter((problem) => !/sandboxed|Content Security Policy/.test(problem))).toEqual([]);
    expect(page.problems.some((problem) => problem.startsWith("dialog"))).toBe(false);
    await page.context().close();
  });

  it(
    "uploads a file through the page with a progress bar, creates a folder and deletes a file",
    { timeout: 60_000 },
    async () => {
      const page = await signedIn();
      await page.goto(`${base}/assets/files/`);
      // Hold the last request (assembling the parts) to look at the progress while it waits.
      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      await page.route("**/*multipart=complete*", async (route) => {
        await held;
        await route.continue();
      });
      const size = 9 * 1024 * 1024;
      await page.getByLabel("Files to upload into this folder").setInputFiles({
        name: "big file.bin",
        mimeType: "application/octet-stream",
        buffer: Buffer.alloc(size, 7),
      });
      await page.getByRole("button", { name: "Upload", exact: true }).click();
      await expect.poll(() => page.getByRole("status").textContent()).toBe("Uploading big file.bin (1 of 1)…");
      // (Slow: with a route set, Chromium hands every request body to the test through its protocol.)
      await expect
        .poll(() => page.locator("progress").evaluate((bar: HTMLProgressElement) => bar.value), { timeout: 30_000 })
        .toBe(100);
      expect(await page.getByRole("button", { name: "Upload", exact: true }).isDisabled()).toBe(true);
      await expectAccessible(page);
      await screenshot(page, "assets-uploading-desktop");
      release();
      await expect.poll(() => page.getByRole("link", { name: "big file.bin" }).count(), { timeout: 10_000 }).toBe(1);
      const stored = await t.app.inject({
        url: "/endpoints/files/metadata/big%20file.bin",
        headers: { "x-apikey": t.adminKey },
      });
      expect(stored.json()).toMatchObject({ size, type: "application/octet-stream" });

      await page.getByLabel("Folder name").fill("made in chromium");
      await page.getByRole("button", { name: "Create folder" }).click();
      await expect.poll(() => page.getByRole("link", { name: "made in chromium/" }).count()).toBe(1);

      await page.getByRole("link", { name: "old.txt" }).click();
      await page.getByRole("link", { name: "Delete…" }).click();
      await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Delete old.txt?");
      await expectAccessible(page);
      await screenshot(page, "assets-delete-desktop");
      await page.getByRole("button", { name: "Delete" }).click();
      await page.waitForURL(`${base}/assets/files/`);
      expect(await page.getByRole("link", { name: "old.txt" }).count()).toBe(0);

      await page.goto(`${base}/assets/files/docs/readme.txt?edit`);
      await expectAccessible(page);
      await screenshot(page, "assets-edit-desktop");
      expect(page.problems).toEqual([]);
      await page.context().close();
    },
  );

  it("uploads files dropped on the upload zone", async () => {
    const page = await signedIn();
    await page.goto(`${base}/assets/files/docs/`);
    // What a drag from the desktop delivers: a drop event whose DataTransfer holds the files.
    const transfer = await page.evaluateHandle(() => {
      const data = new DataTransfer();
      data.items.add(new File(["first"], "dropped-1.txt", { type: "text/plain" }));
      data.items.add(new File(["second"], "dropped-2.txt", { type: "text/plain" }));
      return data;
    });
    await page.locator("[data-asset-drop]").dispatchEvent("dragover", { dataTransfer: transfer });
    await page.locator("[data-asset-drop]").dispatchEvent("drop", { dataTransfer: transfer });
    // Two uploads, each through the multipart protocol (on a cluster node: parts into the object store).
    await expect
      .poll(() => page.getByRole("link", { name: /^dropped-[12]\.txt$/ }).count(), { timeout: 10_000 })
      .toBe(2);
    const stored = await t.app.inject({
      url: "/endpoints/files/content/docs/dropped-2.txt",
      headers: { "x-apikey": t.adminKey },
    });
    expect(stored.body).toBe("second");
    expect(page.problems).toEqual([]);
    await page.context().close();
  });

  it("fits a phone's width", async () => {
    const page = await signedIn(VIEWPORTS.phone);
    for (const [path, name] of [
      ["/assets/files/", "assets-folder-phone"],
      ["/assets/files/docs/readme.txt", "assets-text-phone"],
      ["/assets/www/site/evil.html", "assets-sandboxed-phone"],
      ["/assets/files/docs/readme.txt?edit", "assets-edit-phone"],
    ] as const) {
      await page.goto(`${base}${path}`);
      expect(await noSidewaysScroll(page), path).toBe(true);
      await expectAccessible(page);
      await screenshot(page, name);
    }
    await page.context().close();
  });
});
