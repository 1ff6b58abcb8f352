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

  it("answers a refused form as a page in the frame, saying what to do, with the pages' headers", async () => {
    const forged = await t.app.inject({
      method: "POST",
      url: "/sign-out",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "",
    });
    expect(forged.statusCode).toBe(403);
    expect(forged.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(forged.headers["www-authenticate"]).toBeUndefined();
    expect(forged.headers["content-security-policy"]).toContain("default-src 'self'");
    expect(forged.body).toContain("<h1>Forbidden</h1>");
    expect(forged.body).toContain("This form has expired or did not come from this site.");
    // The machine APIs keep their plain-text errors.
    const api = await t.app.inject({ method: "GET", url: "/api/security/users/list" });
    expect(api.statusCode).toBe(401);
    expect(api.headers["content-type"]).toBe("text/plain");
  });
});
