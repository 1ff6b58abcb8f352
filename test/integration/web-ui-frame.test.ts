import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";

describe("web UI frame", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it("serves its stylesheet and script, cached for a year only under their current version", async () => {
    const page = await t.app.inject({ method: "GET", url: "/" });
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe("/feeds");
    const css = await t.app.inject({ method: "GET", url: "/ui/style.css" });
    expect(css.statusCode).toBe(200);
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
    expect(css.headers["cache-control"]).toBe("no-cache");
    expect(css.body).toContain("prefers-color-scheme: dark");
    const js = await t.app.inject({ method: "GET", url: "/ui/app.js" });
    expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(js.body).toContain("DOMContentLoaded");
  });
});
