import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import axe from "axe-core";
import { type Browser, chromium, type Page } from "playwright-core";
import { expect } from "vitest";

/**
 * Debian's Chromium driven by playwright-core (no browser download: `.ci/run` installs the
 * package). The flags keep a headless Chromium from reaching for Google's services, which this
 * network refuses at every start; --no-sandbox because tests may run as root.
 */
export const CHROMIUM = "/usr/bin/chromium";
export const chromiumInstalled = () => existsSync(CHROMIUM);

const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS, headless: true });
}

/** Desktop and phone widths the pages are checked (and photographed) at. */
export const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const;

export interface AxeFinding {
  readonly id: string;
  readonly impact: string | null | undefined;
  readonly help: string;
  readonly targets: readonly string[];
}

/**
 * axe-core's serious and critical violations on the page as it stands. The engine goes in through
 * the DevTools protocol (page.evaluate), which the page's Content-Security-Policy does not govern,
 * so the policy under test stays strict.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeFinding[]> {
  await page.evaluate(axe.source);
  const result = await page.evaluate(async () => {
    const engine = (globalThis as unknown as { axe: typeof axe }).axe;
    const run = await engine.run(document);
    return run.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      targets: violation.nodes.map((node) => node.target.join(" ")),
    }));
  });
  return result.filter((finding) => finding.impact === "serious" || finding.impact === "critical");
}

const SCREENSHOTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../test-output/screenshots");

/** How much of a long page a screenshot keeps: enough to judge the page; a whole long list costs seconds. */
const SCREENSHOT_MAX_HEIGHT = 2400;

/** A screenshot of the page from its top (at most SCREENSHOT_MAX_HEIGHT) under test-output/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  const { width, height } = await page.evaluate(() => ({
    width: document.documentElement.clientWidth,
    height: document.documentElement.scrollHeight,
  }));
  await page.screenshot({
    path: file,
    fullPage: true,
    clip: { x: 0, y: 0, width, height: Math.min(height, SCREENSHOT_MAX_HEIGHT) },
  });
  return file;
}

/** A page that records what went wrong on it: dialogs, script errors, CSP reports, failed sub-resources. */
export type WatchedPage = Page & { readonly problems: string[] };

/**
 * A fresh browser profile (no cookies carried over) and a page in it that records any dialog,
 * page error, console error (a CSP violation shows as one) and failed sub-resource. Pages
 * themselves may answer 401, 403 or 404 on purpose, so only non-document responses count.
 * Close it with `page.context().close()`.
 */
export async function freshPage(
  browser: Browser,
  viewport: { width: number; height: number } = VIEWPORTS.desktop,
): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("dialog", (dialog) => {
    problems.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      problems.push(`console: ${message.text()}`);
    }
  });
  page.on("response", (response) => {
    if (response.status() >= 400 && response.request().resourceType() !== "document") {
      problems.push(`${response.status()} for ${response.url()}`);
    }
  });
  return Object.assign(page, { problems });
}

/** Signs in through the sign-in form (the browser then follows the redirect to /feeds). */
export async function signInThroughForm(page: Page, base: string, user: string, password: string): Promise<void> {
  await page.goto(`${base}/sign-in`);
  await page.getByLabel("User name").fill(user);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** axe-core finds no serious or critical violation on the page as it stands. */
export async function expectAccessible(page: Page): Promise<void> {
  expect(await seriousAxeViolations(page), page.url()).toEqual([]);
}

/** Whether the page fits its viewport's width (no sideways scrolling). */
export const noSidewaysScroll = (page: Page): Promise<boolean> =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

/** A fresh watched page signed in as `user` through the form, on /feeds (where sign-in lands). */
export async function signedInPage(
  browser: Browser,
  base: string,
  user: string,
  password: string,
  viewport: { width: number; height: number } = VIEWPORTS.desktop,
): Promise<WatchedPage> {
  const page = await freshPage(browser, viewport);
  await signInThroughForm(page, base, user, password);
  await page.waitForURL(`${base}/feeds`);
  return page;
}
