import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { auditRecords } from "../helpers/audit-records.js";
import { createUser, grant } from "../helpers/fixtures.js";
import { UiClient } from "../helpers/ui-client.js";

/** The audit log page (issue 17 section 5): for administrators, filtered, paged, escaped. */

const PASSWORD = "Audit-page-pass-1";
let t: TestApp;
let admin: UiClient;

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  await grant(t.database, {
    user: await createUser(t.database, "auditor", PASSWORD),
    attributes: ["Admin_ConfigureProGet"],
  });
  await createUser(t.database, "plain", PASSWORD);
  admin = new UiClient(t);
  await admin.signIn("auditor", PASSWORD);
});
afterAll(async () => t.close());

describe("sign-ins in the audit log", () => {
  it("names the user who signed in, and the user name a failed sign-in tried, never the password", async () => {
    const visitor = new UiClient(t, "198.51.100.40");
    await visitor.signIn("plain", PASSWORD);
    const stranger = new UiClient(t, "198.51.100.41");
    const form = await stranger.get("/sign-in");
    const token =
      /action="\/sign-in"[^>]*>\s*<input type="hidden" name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? "";
    const failed = await stranger.request({
      method: "POST",
      url: "/sign-in",
      form: [
        ["_csrf", token],
        ["user", "plain"],
        ["password", "not-the-Password-9"],
      ],
    });
    expect(failed.statusCode).toBe(401);
    // Records are written once the event loop is free after the response: auditRecords waits for that.
    const [success, refusal] = await auditRecords(t, "action = 'POST /sign-in' AND object = 'user=plain'");
    expect(success).toMatchObject({ actor_kind: "user", actor_name: "plain", object: "user=plain", status: 303 });
    expect(refusal).toMatchObject({ actor_kind: "anonymous", object: "user=plain", status: 401 });
    const everything = JSON.stringify(await auditRecords(t));
    expect(everything).not.toContain(PASSWORD);
    expect(everything).not.toContain("not-the-Password-9");
  });
});

describe("the audit page", () => {
  it("shows records with filters, escapes what they name, and pages with 'Older records'", async () => {
    const hostile = `<script>alert(1)</script>"'`;
    await t.app.inject({
      method: "DELETE",
      url: `/api/management/feeds/delete/${encodeURIComponent(hostile)}`,
      headers: { "x-apikey": t.adminKey },
    });
    for (let i = 0; i < 51; i++) {
      await t.app.inject({
        method: "DELETE",
        url: `/api/management/feeds/delete/paged-${i}`,
        headers: { "x-apikey": t.adminKey },
      });
    }
    const page = await admin.request({ url: "/admin/audit?action=DELETE" });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("name=paged-50");
    expect(page.body).toContain("Older records");
    const older = /href="([^"]*after=\d+[^"]*)"/.exec(page.body)?.[1]?.replace(/&amp;/g, "&");
    expect(older).toBeDefined();
    const next = await admin.request({ url: older ?? "" });
    expect(next.body).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(next.body).not.toContain("<script>alert(1)");
    const filtered = await admin.request({ url: "/admin/audit?object=paged-7" });
    expect(filtered.body).toContain("name=paged-7");
    expect(filtered.body).not.toContain("name=paged-8");
    const bad = await admin.request({ url: "/admin/audit?from=%3Cb%3Enever" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("from must be an ISO 8601");
    expect(bad.body).not.toContain("<b>never");
    const exported = await admin.request({ url: "/admin/audit/export?object=paged-7" });
    expect(exported.headers["content-type"]).toMatch(/^application\/x-ndjson/);
    expect(exported.body.trim().split("\n")).toHaveLength(1);
  });

  it("is refused to those without the privilege: sign-in for Anonymous, 403 for others", async () => {
    const anonymous = await new UiClient(t, "198.51.100.21").request({ url: "/admin/audit" });
    expect(anonymous.statusCode).toBe(303);
    const plain = new UiClient(t, "198.51.100.22");
    await plain.signIn("plain", PASSWORD);
    expect((await plain.request({ url: "/admin/audit" })).statusCode).toBe(403);
    expect((await plain.request({ url: "/admin/audit/export" })).statusCode).toBe(403);
  });
});
