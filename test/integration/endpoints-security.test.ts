import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { rawHeader, rawRequest } from "../helpers/raw-http.js";
import { filesLeftInTmp } from "../helpers/temp-files.js";
import { basic, createFeedKey, createPersonalKey, createSystemKey, createUser, grant } from "../helpers/fixtures.js";

/**
 * Asset directories from an attacker's side (docs/PRODUCT.md "Security baseline", issue point 4):
 * traversal and other hostile paths on every route, and the privileges of docs/compat.md 4.6 for
 * every kind of caller. Each refusal is a clean 4xx with a text body, and nothing changes.
 */
let t: TestApp;
const admin = () => ({ "x-apikey": t.adminKey });

beforeAll(async () => {
  t = await buildTestApp();
  await createAssetDirectory(t, "vault");
  await createAssetDirectory(t, "public");
  await putAsset(t, "vault", "docs/secret.txt", "top secret");
  await putAsset(t, "public", "hello.txt", "hello");
});
afterAll(async () => t.close());

describe("hostile paths, over a real socket (nothing normalises the URL on the way)", () => {
  const HOSTILE = [
    "../vault/docs/secret.txt",
    "docs/../../etc/passwd",
    "%2e%2e/docs/secret.txt",
    "%2E%2E%2Fetc%2Fpasswd",
    "%252e%252e/etc/passwd",
    "docs%5Csecret.txt",
    "docs%255Csecret.txt",
    "docs/%00secret.txt",
    "docs/secret.txt%00.png",
    "C:/Windows/win.ini",
    "%2Fetc%2Fpasswd",
    "./docs/secret.txt",
    "docs//secret.txt",
  ];
  const ROUTES: Array<[method: string, prefix: string, suffix?: string]> = [
    ["GET", "content"],
    ["HEAD", "content"],
    ["POST", "content"],
    ["PUT", "content"],
    ["DELETE", "content"],
    ["GET", "dir"],
    ["POST", "dir"],
    ["POST", "delete", "?recursive=true"],
    ["GET", "metadata"],
    ["POST", "metadata"],
    ["GET", "export"],
    ["HEAD", "export"],
    ["POST", "import"],
    ["POST", "content", "?multipart=upload&id=u&index=0&offset=0&totalSize=20&partSize=20&totalParts=1"],
    ["POST", "content", "?multipart=complete&id=u"],
  ];
  let port: number;
  beforeAll(async () => {
    const address = await t.app.listen({ port: 0, host: "127.0.0.1" });
    port = Number(new URL(address).port);
  });

  it("refuses traversal, backslashes, NUL and absolute forms on every route, before or after decoding", async () => {
    for (const [method, prefix, suffix = ""] of ROUTES) {
      for (const hostile of HOSTILE) {
        const target = `/endpoints/vault/${prefix}/${hostile}${suffix}`;
        const body = method === "POST" || method === "PUT" ? '{"type":"text/html"}' : "";
        const res = await rawRequest(
          port,
          `${method} ${target} HTTP/1.1\r\nHost: wharf\r\nX-ApiKey: ${t.adminKey}\r\nConnection: close\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
        expect(res.status, `${method} ${target}`).toBe(400);
        if (method !== "HEAD") expect(rawHeader(res.headers, "content-type"), `${method} ${target}`).toBe("text/plain");
      }
    }
    // Nothing was created or removed by any of them.
    const all = await t.app.inject({ method: "GET", url: "/endpoints/vault/dir/?recursive=true", headers: admin() });
    expect((all.json() as Array<{ name: string }>).map((item) => item.name)).toEqual(["docs", "secret.txt"]);
    expect(await filesLeftInTmp(t)).toEqual([]);
  });

  it("keeps directories apart: a path never reaches another directory's files", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: "/endpoints/public/content/docs/secret.txt",
      headers: admin(),
    });
    expect(res.statusCode).toBe(404);
  });
});

describe("privileges (docs/compat.md 4.6)", () => {
  const ask = (method: InjectOptions["method"], url: string, headers: Record<string, string>, payload?: string) =>
    t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });

  it("lets a view-only Feed key read, and nothing more", async () => {
    const key = { "x-apikey": await createFeedKey(t.database, "vault", ["view"]) };
    expect((await ask("GET", "/endpoints/vault/content/docs/secret.txt", key)).statusCode).toBe(200);
    expect((await ask("GET", "/endpoints/vault/dir/docs", key)).statusCode).toBe(200);
    expect((await ask("GET", "/endpoints/vault/metadata/docs/secret.txt", key)).statusCode).toBe(200);
    for (const [method, url] of [
      ["POST", "/endpoints/vault/content/docs/new.txt"],
      ["PUT", "/endpoints/vault/content/docs/new.txt"],
      ["PATCH", "/endpoints/vault/content/docs/secret.txt"],
      ["DELETE", "/endpoints/vault/content/docs/secret.txt"],
      ["POST", "/endpoints/vault/dir/newdir"],
      ["POST", "/endpoints/vault/delete/docs?recursive=true"],
      ["POST", "/endpoints/vault/metadata/docs/secret.txt"],
    ] as const) {
      const res = await ask(method, url, key, "x");
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.body).toBe(PERMISSION_DENIED_MESSAGE);
    }
    expect((await ask("GET", "/endpoints/vault/content/docs/secret.txt", admin())).body).toBe("top secret");
  });

  it("needs Overwrite/Delete to replace or delete, Add to create", async () => {
    const adder = { "x-apikey": await createFeedKey(t.database, "vault", ["view", "add"]) };
    expect((await ask("POST", "/endpoints/vault/content/team/a.txt", adder, "a")).statusCode).toBe(201);
    expect((await ask("PUT", "/endpoints/vault/content/team/b.txt", adder, "b")).statusCode).toBe(201);
    const overwrite = await ask("POST", "/endpoints/vault/content/team/a.txt", adder, "changed");
    expect(overwrite.statusCode).toBe(403);
    expect(overwrite.body).toContain(PERMISSION_DENIED_MESSAGE);
    expect((await ask("PATCH", "/endpoints/vault/content/team/a.txt", adder, "changed")).statusCode).toBe(403);
    expect((await ask("DELETE", "/endpoints/vault/content/team/a.txt", adder)).statusCode).toBe(403);
    expect((await ask("GET", "/endpoints/vault/content/team/a.txt", admin())).body).toBe("a");

    const owner = { "x-apikey": await createFeedKey(t.database, "vault", ["view", "add", "delete"]) };
    expect((await ask("POST", "/endpoints/vault/content/team/a.txt", owner, "changed")).statusCode).toBe(201);
    expect((await ask("DELETE", "/endpoints/vault/content/team/a.txt", owner)).statusCode).toBe(200);
    expect((await ask("POST", "/endpoints/vault/delete/team?recursive=true", owner)).statusCode).toBe(200);
  });

  it("scopes a Feed key to its own directory", async () => {
    const other = { "x-apikey": await createFeedKey(t.database, "public", ["view", "add", "delete"]) };
    expect((await ask("GET", "/endpoints/vault/content/docs/secret.txt", other)).statusCode).toBe(403);
    expect((await ask("POST", "/endpoints/vault/content/x.txt", other, "x")).statusCode).toBe(403);
    expect((await ask("GET", "/endpoints/public/content/hello.txt", other)).statusCode).toBe(200);
  });

  it("challenges anonymous callers, and serves them what an administrator granted", async () => {
    const denied = await ask("GET", "/endpoints/public/content/hello.txt", {});
    expect(denied.statusCode).toBe(401);
    expect(denied.headers["www-authenticate"]).toContain("Basic");
    await grant(t.database, {
      anonymous: true,
      attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"],
      feed: "public",
    });
    expect((await ask("GET", "/endpoints/public/content/hello.txt", {})).body).toBe("hello");
    expect((await ask("GET", "/endpoints/public/dir/", {})).statusCode).toBe(200);
    expect((await ask("POST", "/endpoints/public/content/x.txt", {}, "x")).statusCode).toBe(401);
    expect((await ask("GET", "/endpoints/vault/content/docs/secret.txt", {})).statusCode).toBe(401);
  });

  it("applies a user's grants through Basic credentials and Personal keys", async () => {
    const userId = await createUser(t.database, "reader", "reader-password-1");
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"], feed: "vault" });
    const personal = { "x-apikey": await createPersonalKey(t.database, userId) };
    for (const headers of [basic("reader", "reader-password-1"), personal]) {
      expect((await ask("GET", "/endpoints/vault/content/docs/secret.txt", headers)).statusCode).toBe(200);
      expect((await ask("POST", "/endpoints/vault/content/docs/x.txt", headers, "x")).statusCode).toBe(403);
    }
    await grant(t.database, { user: userId, attributes: ["Feeds_AddPackage"], feed: "vault" });
    expect((await ask("POST", "/endpoints/vault/content/users/x.txt", personal, "x")).statusCode).toBe(201);
    expect((await ask("DELETE", "/endpoints/vault/content/users/x.txt", personal)).statusCode).toBe(403);
  });

  it("gives a System key with the feeds API everything, and one without it nothing", async () => {
    const feeds = { "x-apikey": await createSystemKey(t.database, ["feeds"]) };
    expect((await ask("POST", "/endpoints/vault/content/sys/a.txt", feeds, "a")).statusCode).toBe(201);
    expect((await ask("DELETE", "/endpoints/vault/content/sys/a.txt", feeds)).statusCode).toBe(200);
    const badges = { "x-apikey": await createSystemKey(t.database, ["ci-badges"]) };
    expect((await ask("GET", "/endpoints/vault/content/docs/secret.txt", badges)).statusCode).toBe(403);
  });

  it("refuses anonymous callers (401), unknown keys and other directories' keys (403) on every route", async () => {
    const other = { "x-apikey": await createFeedKey(t.database, "public", ["view", "add", "delete"]) };
    const multipart = "id=m&index=0&offset=0&totalSize=1&partSize=1&totalParts=1";
    const routes: Array<[InjectOptions["method"], string]> = [
      ["GET", "content/docs/secret.txt"],
      ["HEAD", "content/docs/secret.txt"],
      ["POST", "content/docs/new.txt"],
      ["PUT", "content/docs/new.txt"],
      ["PATCH", "content/docs/secret.txt"],
      ["DELETE", "content/docs/secret.txt"],
      ["POST", `content/docs/m.bin?multipart=upload&${multipart}`],
      ["POST", "content/docs/m.bin?multipart=complete&id=m"],
      ["GET", "dir/docs"],
      ["POST", "dir/newdir"],
      ["POST", "delete/docs?recursive=true"],
      ["GET", "metadata/docs/secret.txt"],
      ["POST", "metadata/docs/secret.txt"],
      ["GET", "export/docs"],
      ["POST", "import/docs"],
    ];
    const tree = async () => (await ask("GET", "/endpoints/vault/dir/?recursive=true", admin())).body;
    const before = await tree();
    for (const [method, route] of routes) {
      const url = `/endpoints/vault/${route}`;
      for (const [headers, status, code] of [
        [{}, 401, "AUTHENTICATION_REQUIRED"],
        [{ "x-apikey": "not-a-real-key" }, 403, "PERMISSION_DENIED"],
        [other, 403, "PERMISSION_DENIED"],
      ] as const) {
        const res = await ask(method, url, headers, "x");
        expect(res.statusCode, `${method} ${url} ${JSON.stringify(headers)}`).toBe(status);
        expect(res.headers["x-wharf-error"], `${method} ${url}`).toBe(code);
        if (method !== "HEAD") {
          expect(res.body).toBe(status === 401 ? "Authentication is required." : PERMISSION_DENIED_MESSAGE);
        }
      }
    }
    expect((await ask("GET", "/endpoints/vault/content/docs/secret.txt", admin())).body).toBe("top secret");
    expect(await tree()).toBe(before);
  });

  it("refuses an unknown key with 403", async () => {
    const res = await ask("GET", "/endpoints/vault/content/docs/secret.txt", { "x-apikey": "not-a-real-key" });
    expect(res.statusCode).toBe(403);
  });
});

describe("malformed and oversized bodies", () => {
  const json = { "content-type": "application/json" };
  const setMeta = (payload: string) =>
    t.app.inject({
      method: "POST",
      url: "/endpoints/vault/metadata/docs/secret.txt",
      headers: { ...admin(), ...json },
      payload,
    });

  it("refuses metadata that is not JSON (400), a JSON array (415) and an oversized JSON body (413)", async () => {
    const broken = await setMeta("{not json");
    expect(broken.statusCode).toBe(400);
    expect(broken.headers["content-type"]).toBe("text/plain");
    expect(broken.body).toContain("not valid JSON");
    const array = await setMeta('[{"userMetadata":{"a":"b"}}]');
    expect(array.statusCode).toBe(415);
    expect(array.body).toBe("Send the metadata as a JSON object (application/json).");
    const huge = await setMeta(JSON.stringify({ userMetadata: { a: "x".repeat(2 * 1024 * 1024) } }));
    expect(huge.statusCode).toBe(413);
    expect(huge.headers["content-type"]).toBe("text/plain");
    const long = await setMeta(JSON.stringify({ userMetadata: { a: "x".repeat(9000) } }));
    expect(long.statusCode).toBe(400);
    expect(long.body).toBe("Metadata 'a' is longer than 8192 characters.");
    const item = await t.app.inject({
      method: "GET",
      url: "/endpoints/vault/metadata/docs/secret.txt",
      headers: admin(),
    });
    expect(item.json()).toMatchObject({ userMetadata: {} });
  });

  it("refuses an import of something that is not an archive (400), writing nothing", async () => {
    for (const format of ["zip", "tgz"]) {
      const res = await t.app.inject({
        method: "POST",
        url: `/endpoints/vault/import/imported?format=${format}`,
        headers: admin(),
        payload: "this is not an archive",
      });
      expect(res.statusCode, format).toBe(400);
      expect(res.headers["x-wharf-error"], format).toBe("ARCHIVE_INVALID");
      expect(res.body, format).toMatch(/^The archive is not a valid /);
    }
    const imported = await t.app.inject({ method: "GET", url: "/endpoints/vault/metadata/imported", headers: admin() });
    expect(imported.statusCode).toBe(404);
    expect(await filesLeftInTmp(t)).toEqual([]);
  });

  describe("over WHARF_MAX_UPLOAD_BYTES", () => {
    let small: TestApp;
    beforeAll(async () => {
      small = await buildTestApp({ env: { WHARF_MAX_UPLOAD_BYTES: "4096" } });
      await createAssetDirectory(small, "tiny");
    });
    afterAll(async () => small.close());

    it("refuses a file, a multipart upload and an import with 413 and stores nothing", async () => {
      const headers = { "x-apikey": small.adminKey };
      const big = Buffer.alloc(5000);
      const multipart = "multipart=upload&id=big&index=0&offset=0&totalSize=8000&partSize=4000&totalParts=2";
      for (const url of ["content/big.bin", `content/big.bin?${multipart}`, "import"]) {
        const res = await small.app.inject({ method: "POST", url: `/endpoints/tiny/${url}`, headers, payload: big });
        expect(res.statusCode, url).toBe(413);
        expect(res.headers["x-wharf-error"], url).toBe("UPLOAD_TOO_LARGE");
        expect(res.body, url).toContain("exceeds the limit of 4096 bytes");
      }
      const listing = await small.app.inject({ method: "GET", url: "/endpoints/tiny/dir?recursive=true", headers });
      expect(listing.json()).toEqual([]);
    });
  });
});
