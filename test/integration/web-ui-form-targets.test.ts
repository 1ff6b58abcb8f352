import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory } from "../helpers/asset-fixtures.js";
import { createUser, grant } from "../helpers/fixtures.js";
import { releasesFixtures } from "../helpers/releases-fixtures.js";
import { UiClient } from "../helpers/ui-client.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Every form target of the web UI, asked the way an attacker or a broken client would: without a
 * session, with a wrong API key, with a body that is no form, with form fields sent twice or as
 * nonsense, with a body far over the limit, and with '..' in the path. Each answer is a clear 4xx
 * (or the sign-in redirect), never a 500. (Nonsense fields next to valid ones may still make a valid
 * change, as the API would: the administrator's rename of a feed to the first `name` sent, say.)
 */

const TARGETS = [
  "/admin/api-keys",
  "/admin/api-keys/1/revoke",
  "/admin/feeds",
  "/admin/feeds/main",
  "/admin/feeds/main/delete",
  "/admin/feeds/main/storage",
  "/admin/feeds/main/move",
  "/admin/connectors",
  "/admin/connectors/edit",
  "/admin/connectors/delete",
  "/admin/connectors/check",
  "/admin/users",
  "/admin/users/edit",
  "/admin/users/delete",
  "/admin/groups",
  "/admin/groups/delete",
  "/admin/permissions",
  "/admin/permissions/1/revoke",
  "/applications/1/releases",
  "/applications/1/builds",
  "/applications/1/releases/1.0/builds",
  "/applications/1/releases/1.0/cancel",
  "/applications/1/releases/1.0/restore",
  "/applications/1/builds/1/deploy",
  "/applications/1/builds/1/reject",
  "/configuration/check",
  "/configuration/servers/web1/remediate",
  "/ui/feeds/main/upload",
  "/ui/feeds/main/packages/tool/delete",
  "/ui/assets/files/folder/",
  "/ui/assets/files/delete/docs/",
  "/ui/assets/files/metadata/docs/",
  "/ui/assets/files/upload/",
  // Last: ending one's own session (id 1 is this one) signs the client out, whatever the body.
  "/account/sessions/revoke-others",
  "/account/sessions/1/revoke",
];

let t: TestApp;
let admin: UiClient;

beforeAll(async () => {
  t = await buildTestApp();
  await createUpackFixtures(t).createFeed("main");
  await createAssetDirectory(t, "files");
  await releasesFixtures(t).setup("Shop");
  await grant(t.database, {
    user: await createUser(t.database, "root", "root-password-1"),
    attributes: ["Admin_ConfigureProGet"],
  });
  admin = new UiClient(t);
  await admin.signIn("root", "root-password-1");
});

afterAll(async () => {
  await t?.close();
});

/** A POST as the signed-in administrator, with the session's token in the header (as the pages' script sends it). */
function adminPost(url: string, contentType: string, payload: string | Buffer) {
  const cookie = [...admin.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  return t.app.inject({
    method: "POST",
    url,
    remoteAddress: admin.address,
    headers: { cookie, "x-csrf-token": admin.token, "content-type": contentType },
    payload,
  });
}

describe("the web UI's form targets", () => {
  it("send a caller without a session to sign in, or refuse it, and refuse a wrong API key", async () => {
    for (const url of TARGETS) {
      const anonymous = await t.app.inject({ method: "POST", url, payload: {} });
      expect([303, 401, 403], `${url} anonymous: ${anonymous.body}`).toContain(anonymous.statusCode);
      const wrongKey = await t.app.inject({ method: "POST", url, headers: { "x-apikey": "not-a-key" }, payload: {} });
      expect([401, 403], `${url} wrong key`).toContain(wrongKey.statusCode);
    }
  });

  it("refuse '..' in an asset path, raw or percent-encoded", async () => {
    for (const path of ["../x/", "docs/../../x/", "%2e%2e/x/", "docs%2f..%2fx/"]) {
      const res = await adminPost(`/ui/assets/files/folder/${path}`, "application/x-www-form-urlencoded", "name=made");
      expect([400, 404], `${path}: ${res.body}`).toContain(res.statusCode);
    }
  });

  it("answer a body that is no form, repeated and nonsense fields, and an over-long body with a 4xx", async () => {
    for (const url of TARGETS) {
      const broken = await adminPost(url, "application/json", "{");
      expect(broken.statusCode, `${url} broken JSON: ${broken.body}`).toBeGreaterThanOrEqual(300);
      expect(broken.statusCode, `${url} broken JSON: ${broken.body}`).toBeLessThan(500);

      const nonsense = new URLSearchParams([
        ["name", "a"],
        ["name", "b"],
        ["feedType", "\u0000"],
        ["start", "not a time"],
        ["simulate", "maybe"],
        ["buildNumber", "-1"],
        ["type", "<script>"],
        ["privileges", "Admin_ConfigureProGet"],
      ]).toString();
      const odd = await adminPost(url, "application/x-www-form-urlencoded", nonsense);
      expect(odd.statusCode, `${url} nonsense fields: ${odd.body}`).toBeLessThan(500);

      const huge = await adminPost(url, "application/x-www-form-urlencoded", Buffer.alloc(3 * 1024 * 1024, "a"));
      expect(huge.statusCode, `${url} 3 MiB form`).toBeGreaterThanOrEqual(400);
      expect(huge.statusCode, `${url} 3 MiB form`).toBeLessThan(500);
    }
  });
});
