import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { createUser, grant } from "../helpers/fixtures.js";
import { filePart, formBody } from "../helpers/form-data.js";
import { rawRequest } from "../helpers/raw-http.js";

/**
 * The web UI's file browser of asset directories (issue 16, part B): listing and breadcrumbs,
 * previews (active content only sandboxed), the ui download and upload routes, folders, deletes and
 * metadata through the endpoints services with the API's needs; CSRF, forged posts and hostile
 * paths and names.
 */

const PASSWORD = "assets-password-1";
const HOSTILE_NAME = `<img src=x onerror=alert(1)>.txt`;

/** A browser holding its cookies, signed in through the form. */
class Browser {
  readonly cookies = new Map<string, string>();
  constructor(private readonly t: TestApp) {}

  async request(options: {
    method?: "GET" | "POST" | "DELETE";
    url: string;
    form?: [string, string][];
    headers?: Record<string, string>;
    payload?: Buffer | string;
  }): Promise<LightMyRequestResponse> {
    const cookie = cookieOf(this);
    const res = await this.t.app.inject({
      method: options.method ?? "GET",
      url: options.url,
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(options.form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
        ...options.headers,
      },
      ...(options.form ? { payload: new URLSearchParams(options.form).toString() } : {}),
      ...(options.payload !== undefined ? { payload: options.payload } : {}),
    });
    for (const set of res.cookies) {
      if (set.value === "" || set.maxAge === 0) this.cookies.delete(set.name);
      else this.cookies.set(set.name, set.value);
    }
    return res;
  }

  async signIn(user: string): Promise<void> {
    const form = await this.request({ url: "/sign-in" });
    const res = await this.request({
      method: "POST",
      url: "/sign-in",
      form: [
        ["_csrf", tokenOf(form.body)],
        ["user", user],
        ["password", PASSWORD],
      ],
    });
    expect(res.statusCode).toBe(303);
  }

  /** The session's CSRF token, from a page's csrf-token meta. */
  async token(): Promise<string> {
    const page = await this.request({ url: "/assets/files/" });
    return /<meta name="csrf-token" content="([^"]+)"/.exec(page.body)?.[1] ?? "";
  }

  async post(url: string, fields: [string, string][], token?: string): Promise<LightMyRequestResponse> {
    const _csrf = token ?? (await this.token());
    return this.request({ method: "POST", url, form: [["_csrf", _csrf], ...fields] });
  }
}

let port: number | undefined;
/** The app on a real socket (once), for requests sent as raw bytes. */
async function listening(): Promise<number> {
  port ??= Number(new URL(await t.app.listen({ port: 0, host: "127.0.0.1" })).port);
  return port;
}

const cookieOf = (browser: Browser) => [...browser.cookies].map(([name, value]) => `${name}=${value}`).join("; ");

const tokenOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";

let t: TestApp;
let admin: Browser;
let viewer: Browser;

beforeAll(async () => {
  t = await buildTestApp();
  await createAssetDirectory(t, "files");
  await grant(t.database, {
    user: await createUser(t.database, "root", PASSWORD),
    attributes: ["Admin_ConfigureProGet"],
  });
  await grant(t.database, { user: await createUser(t.database, "viewer", PASSWORD), attributes: ["Feeds_ViewFeed"] });
  for (const [path, body, type] of [
    ["docs/readme.txt", "hello <b>world</b>", "text/plain"],
    ["docs/deep/notes.md", "# notes", "text/markdown"],
    ["site/evil.html", "<script>parent.document.title='pwned'</script>", "text/html"],
    ["site/evil.svg", '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "image/svg+xml"],
    ["pixel.png", Buffer.from("89504e470d0a1a0a", "hex"), "image/png"],
    [encodeURIComponent(HOSTILE_NAME), "x", "text/plain"],
  ] as const) {
    const res = await putAsset(t, "files", path, body, { "content-type": type });
    expect(res.statusCode, res.body).toBe(201);
  }
  admin = new Browser(t);
  await admin.signIn("root");
  viewer = new Browser(t);
  await viewer.signIn("viewer");
});
afterAll(async () => t.close());

describe("browsing", () => {
  it("lists the root, folders first, with sizes, types and dates, and links ending with '/' for folders", async () => {
    const res = await admin.request({ url: "/assets/files/" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toContain("text/html");
    expect(res.body).toContain('<a href="/assets/files/docs/" class="asset-folder">docs/</a>');
    expect(res.body).toContain('<a href="/assets/files/pixel.png">pixel.png</a>');
    expect(res.body.indexOf("docs/</a>")).toBeLessThan(res.body.indexOf("pixel.png</a>"));
    expect(res.body).toContain("image/png");
    expect(res.body).toMatch(/<td class="num">8 B<\/td>/);
    expect(res.body).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
  });

  it("answers /assets/<feed> as the root and redirects a folder without '/' and a file with one", async () => {
    const root = await admin.request({ url: "/assets/files" });
    expect(root.statusCode).toBe(301);
    expect(root.headers.location).toBe("/assets/files/");
    expect((await admin.request({ url: "/assets/files/" })).statusCode).toBe(200);
    const folder = await admin.request({ url: "/assets/files/docs" });
    expect(folder.statusCode).toBe(301);
    expect(folder.headers.location).toBe("/assets/files/docs/");
    const file = await admin.request({ url: "/assets/files/docs/readme.txt/" });
    expect(file.statusCode).toBe(301);
    expect(file.headers.location).toBe("/assets/files/docs/readme.txt");
  });

  it("shows breadcrumbs to every folder above", async () => {
    const res = await admin.request({ url: "/assets/files/docs/deep/" });
    expect(res.statusCode).toBe(200);
    const crumbs = /<nav aria-label="Breadcrumb"[\s\S]*?<\/nav>/.exec(res.body)?.[0] ?? "";
    expect(crumbs).toContain('<a href="/feeds">Feeds</a>');
    expect(crumbs).toContain('<a href="/assets/files/">files</a>');
    expect(crumbs).toContain('<a href="/assets/files/docs/">docs</a>');
    expect(crumbs).not.toContain("deep");
    expect(res.body).toContain("<h1>deep</h1>");
  });

  it("renders a hostile file name as text", async () => {
    const res = await admin.request({ url: "/assets/files/" });
    expect(res.body).not.toContain("<img src=x");
    expect(res.body).toContain("&lt;img src=x onerror=alert(1)&gt;.txt");
    const page = await admin.request({ url: `/assets/files/${encodeURIComponent(HOSTILE_NAME)}` });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain("<img src=x");
  });

  it("pages a large folder", async () => {
    await createAssetDirectory(t, "many");
    for (let i = 0; i < 205; i++) await putAsset(t, "many", `f${String(i).padStart(3, "0")}.txt`, "x");
    const first = await admin.request({ url: "/assets/many/" });
    expect(first.body).toContain("Page 1 of 2 (205 items)");
    expect(first.body).toContain('href="/assets/many/?page=2"');
    expect(first.body).not.toContain("f200.txt");
    const second = await admin.request({ url: "/assets/many/?page=2" });
    expect(second.body).toContain("f204.txt");
    expect(second.body).not.toContain("f000.txt");
  });

  it("answers 404 for a missing path or directory", async () => {
    expect((await admin.request({ url: "/assets/files/nope/" })).statusCode).toBe(404);
    expect((await admin.request({ url: "/assets/nope/" })).statusCode).toBe(404);
    // inject resolves '../' and '%2e%2e' before routing, as browsers do: another feed's page, not there.
    expect((await admin.request({ url: "/assets/files/docs/../../x" })).statusCode).toBe(404);
  });

  it("refuses traversal and encoded slashes sent as raw bytes, on pages and forms", async () => {
    const port = await listening();
    const cookie = [...admin.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const form = `_csrf=${encodeURIComponent(await admin.token())}`;
    const hostile = [
      "../x",
      "%2e%2e/x",
      "docs/%2E%2E/%2e%2e/x",
      "docs%2freadme.txt",
      "docs%5Creadme.txt",
      "..%2F..%2Fx",
    ];
    for (const tail of hostile) {
      for (const [method, target] of [
        ["GET", `/assets/files/${tail}`],
        ["POST", `/ui/assets/files/delete/${tail}/`],
        ["POST", `/ui/assets/files/metadata/${tail}`],
      ] as const) {
        const body = method === "POST" ? form : "";
        const res = await rawRequest(
          port,
          `${method} ${target} HTTP/1.1\r\nHost: wharf\r\nCookie: ${cookie}\r\nConnection: close\r\n` +
            `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
        expect(res.status, `${method} ${target}`).toBe(400);
      }
    }
    expect((await admin.request({ url: "/assets/files/docs/readme.txt" })).statusCode).toBe(200);
  });

  it("sends Anonymous to sign in", async () => {
    const res = await t.app.inject({ url: "/assets/files/" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/sign-in?next=%2Fassets%2Ffiles%2F");
  });
});

describe("previews and downloads", () => {
  it("shows text escaped and capped", async () => {
    const res = await admin.request({ url: "/assets/files/docs/readme.txt" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("hello &lt;b&gt;world&lt;/b&gt;");
    expect(res.body).toContain('href="/ui/endpoints/files/content/docs/readme.txt" download="readme.txt"');
    await putAsset(t, "files", "big.log", "a".repeat(70 * 1024));
    const big = await admin.request({ url: "/assets/files/big.log" });
    expect(big.body).toContain("Only the first 64 KiB are shown");
    expect(big.body).not.toContain("a".repeat(64 * 1024 + 1));
  });

  it("shows raster images with <img> and active content only in a sandboxed frame", async () => {
    const png = await admin.request({ url: "/assets/files/pixel.png" });
    expect(png.body).toContain('<img class="asset-image" src="/ui/endpoints/files/content/pixel.png"');
    for (const name of ["evil.html", "evil.svg"]) {
      const page = await admin.request({ url: `/assets/files/site/${name}` });
      expect(page.body).toContain(`<iframe class="asset-frame" sandbox src="/ui/endpoints/files/content/site/${name}"`);
      expect(page.body).not.toContain("<script>parent");
      expect(page.body).not.toContain("<svg");
    }
  });

  it("serves files through the ui download route, sandboxed, nosniff, frameable by the UI only", async () => {
    for (const name of ["site/evil.html", "site/evil.svg", "pixel.png", "docs/readme.txt"]) {
      const res = await admin.request({ url: `/ui/endpoints/files/content/${name}` });
      expect(res.statusCode, name).toBe(200);
      const csp = String(res.headers["content-security-policy"]);
      expect(csp).toMatch(/^sandbox;/);
      expect(csp).not.toContain("allow-");
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'self'");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["x-frame-options"]).toBe("SAMEORIGIN");
    }
    const html = await admin.request({ url: "/ui/endpoints/files/content/site/evil.html" });
    expect(html.body).toBe("<script>parent.document.title='pwned'</script>");
  });

  it("sandboxes even in a static-site directory, where the API serves HTML as is", async () => {
    await createAssetDirectory(t, "site", { staticSite: true });
    await putAsset(t, "site", "index.html", "<p>hi</p>", { "content-type": "text/html" });
    const api = await t.app.inject({ url: "/endpoints/site/content/index.html", headers: { "x-apikey": t.adminKey } });
    expect(api.headers["content-security-policy"]).toBeUndefined();
    const ui = await admin.request({ url: "/ui/endpoints/site/content/index.html" });
    expect(String(ui.headers["content-security-policy"])).toMatch(/^sandbox;/);
  });

  it("needs Download for the bytes: a viewer sees no preview, no download link, and gets 403", async () => {
    const page = await viewer.request({ url: "/assets/files/docs/readme.txt" });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain("/ui/endpoints/");
    expect(page.body).not.toContain("hello");
    expect((await viewer.request({ url: "/ui/endpoints/files/content/docs/readme.txt" })).statusCode).toBe(403);
    // The session cookie never authenticates the API itself.
    expect((await admin.request({ url: "/endpoints/files/content/docs/readme.txt" })).statusCode).toBe(401);
  });
});

describe("changes through the forms", () => {
  it("uploads files with the plain form (token first), into the folder, by name", async () => {
    const token = await admin.token();
    const form = formBody([
      { name: "_csrf", content: token },
      filePart("one.txt", "first file", "text/plain"),
      filePart("two.bin", "second"),
    ]);
    const res = await admin.request({
      method: "POST",
      url: "/ui/assets/files/upload/docs/",
      headers: { "content-type": form.contentType },
      payload: form.payload,
    });
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe("/assets/files/docs/");
    const stored = await t.app.inject({
      url: "/endpoints/files/content/docs/one.txt",
      headers: { "x-apikey": t.adminKey },
    });
    expect(stored.body).toBe("first file");
  });

  it("refuses the plain upload form without its token, storing nothing", async () => {
    const form = formBody([filePart("sneaky.txt", "x")]);
    const res = await admin.request({
      method: "POST",
      url: "/ui/assets/files/upload/",
      headers: { "content-type": form.contentType },
      payload: form.payload,
    });
    expect(res.statusCode).toBe(403);
    expect((await admin.request({ url: "/assets/files/sneaky.txt" })).statusCode).toBe(404);
  });

  it("uploads through the API's multipart protocol under /ui with the x-csrf-token header", async () => {
    const token = await admin.token();
    const base = "/ui/endpoints/files/content/up/big.txt";
    const parts = ["hello ", "multipart"];
    let offset = 0;
    for (const [index, part] of parts.entries()) {
      const query = `multipart=upload&id=abc123&index=${index}&offset=${offset}&totalSize=15&partSize=${part.length}&totalParts=2`;
      const res = await admin.request({
        method: "POST",
        url: `${base}?${query}`,
        headers: { "x-csrf-token": token, "content-type": "application/octet-stream" },
        payload: part,
      });
      expect(res.statusCode, res.body).toBe(200);
      offset += part.length;
    }
    const done = await admin.request({
      method: "POST",
      url: `${base}?multipart=complete&id=abc123`,
      headers: { "x-csrf-token": token, "content-type": "text/plain" },
    });
    expect(done.statusCode, done.body).toBe(200);
    const page = await admin.request({ url: "/assets/files/up/big.txt" });
    expect(page.body).toContain("hello multipart");
  });

  it("refuses /ui API writes without the header token (before the body), and with another session's", async () => {
    const noToken = await admin.request({
      method: "POST",
      url: "/ui/endpoints/files/content/forged.txt",
      headers: { "content-type": "text/plain" },
      payload: "forged",
    });
    expect(noToken.statusCode).toBe(403);
    const other = new Browser(t);
    await other.signIn("root");
    const wrongSession = await admin.request({
      method: "DELETE",
      url: "/ui/endpoints/files/content/docs/readme.txt",
      headers: { "x-csrf-token": await other.token() },
    });
    expect(wrongSession.statusCode).toBe(403);
    expect((await admin.request({ url: "/assets/files/forged.txt" })).statusCode).toBe(404);
    expect((await admin.request({ url: "/assets/files/docs/readme.txt" })).statusCode).toBe(200);
  });

  it("refuses before reading the body: an upload without its token, and a form of a viewer without Add", async () => {
    const port = await listening();
    // 100 MB announced and none sent: an answer can only come from a check made before the body.
    const announce = (target: string, browser: Browser, type: string) =>
      rawRequest(
        port,
        `POST ${target} HTTP/1.1\r\nHost: wharf\r\nCookie: ${cookieOf(browser)}\r\nConnection: close\r\n` +
          `Content-Type: ${type}\r\nContent-Length: 100000000\r\n\r\n`,
      );
    const noToken = await announce("/ui/endpoints/files/content/huge.bin", admin, "application/octet-stream");
    expect(noToken.status).toBe(403);
    const viewerForm = await announce("/ui/assets/files/upload/", viewer, "multipart/form-data; boundary=x");
    expect(viewerForm.status).toBe(403);
  });

  it("creates a folder, refuses a bad name with the message, and needs the token", async () => {
    const res = await admin.post("/ui/assets/files/folder/docs/", [["name", "made here"]]);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/assets/files/docs/");
    expect((await admin.request({ url: "/assets/files/docs/made%20here/" })).statusCode).toBe(200);
    const bad = await admin.post("/ui/assets/files/folder/", [["name", "../up"]]);
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('role="alert"');
    expect(bad.body).toContain('value="../up"');
    const forged = await admin.request({
      method: "POST",
      url: "/ui/assets/files/folder/",
      form: [["name", "forged"]],
    });
    expect(forged.statusCode).toBe(403);
    expect((await admin.request({ url: "/assets/files/forged/" })).statusCode).toBe(404);
  });

  it("edits metadata and the cache header, shown again on the page and sent by downloads", async () => {
    const edit = await admin.request({ url: "/assets/files/docs/readme.txt?edit" });
    expect(edit.statusCode).toBe(200);
    expect(edit.body).toContain('action="/ui/assets/files/metadata/docs/readme.txt/"');
    const res = await admin.post("/ui/assets/files/metadata/docs/readme.txt/", [
      ["type", "text/plain; charset=utf-8"],
      ["cacheType", "TTL"],
      ["cacheValue", "600"],
      ["name.0", "owner"],
      ["value.0", "<b>team</b>"],
      ["name.1", "X-Build"],
      ["value.1", "42"],
      ["header.1", "on"],
    ]);
    expect(res.statusCode, res.body).toBe(303);
    const page = await admin.request({ url: "/assets/files/docs/readme.txt" });
    expect(page.body).toContain("&lt;b&gt;team&lt;/b&gt;");
    expect(page.body).toContain("public, max-age=600");
    const api = await t.app.inject({
      url: "/endpoints/files/metadata/docs/readme.txt",
      headers: { "x-apikey": t.adminKey },
    });
    expect(api.json()).toMatchObject({
      type: "text/plain; charset=utf-8",
      userMetadata: { owner: "<b>team</b>", "X-Build": { value: "42", includeInResponseHeader: true } },
      cacheHeader: { type: "TTL", value: 600 },
    });
    const download = await admin.request({ url: "/ui/endpoints/files/content/docs/readme.txt" });
    expect(download.headers["x-build"]).toBe("42");
    expect(download.headers["cache-control"]).toBe("public, max-age=600");
  });

  it("shows the service's refusal of metadata on the form, with what was sent", async () => {
    const res = await admin.post("/ui/assets/files/metadata/docs/readme.txt/", [
      ["cacheType", "TTL"],
      ["cacheValue", "soon"],
      ["name.0", "Content-Type"],
      ["value.0", "text/html"],
      ["header.0", "on"],
    ]);
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('role="alert"');
    expect(res.body).toContain('value="soon"');
  });

  it("deletes a file and a folder with its contents after the confirmation step", async () => {
    const confirm = await admin.request({ url: "/assets/files/docs/deep/?delete" });
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain("everything in it");
    expect(confirm.body).toContain('action="/ui/assets/files/delete/docs/deep/"');
    const res = await admin.post("/ui/assets/files/delete/docs/deep/", []);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/assets/files/docs/");
    expect((await admin.request({ url: "/assets/files/docs/deep/" })).statusCode).toBe(404);
    const file = await admin.post("/ui/assets/files/delete/big.log/", []);
    expect(file.statusCode).toBe(303);
    expect(file.headers.location).toBe("/assets/files/");
    expect((await admin.request({ url: "/assets/files/big.log" })).statusCode).toBe(404);
  });
});

describe("a viewer without the privileges", () => {
  it("sees no upload, folder, edit or delete controls", async () => {
    for (const url of ["/assets/files/", "/assets/files/docs/", "/assets/files/docs/readme.txt"]) {
      const res = await viewer.request({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).not.toContain("/ui/assets/");
      expect(res.body).not.toContain("?edit");
      expect(res.body).not.toContain("?delete");
      expect(res.body).not.toContain("data-asset-upload");
    }
    expect((await viewer.request({ url: "/assets/files/docs/readme.txt?edit" })).statusCode).toBe(403);
    expect((await viewer.request({ url: "/assets/files/docs/readme.txt?delete" })).statusCode).toBe(403);
  });

  it("gets 403 forging each form and each /ui API write with a valid token, and nothing changes", async () => {
    const token = await viewer.token();
    expect(token).not.toBe("");
    for (const [url, fields] of [
      ["/ui/assets/files/folder/", [["name", "viewer-was-here"]]],
      ["/ui/assets/files/delete/docs/readme.txt/", []],
      ["/ui/assets/files/metadata/docs/readme.txt/", [["cacheType", "NoCache"]]],
    ] as const) {
      const res = await viewer.post(
        url,
        fields.map(([a, b]) => [a, b]),
        token,
      );
      expect(res.statusCode, url).toBe(403);
    }
    const form = formBody([{ name: "_csrf", content: token }, filePart("viewer.txt", "x")]);
    const upload = await viewer.request({
      method: "POST",
      url: "/ui/assets/files/upload/",
      headers: { "content-type": form.contentType },
      payload: form.payload,
    });
    expect(upload.statusCode).toBe(403);
    const put = await viewer.request({
      method: "POST",
      url: "/ui/endpoints/files/content/viewer.txt",
      headers: { "x-csrf-token": token, "content-type": "text/plain" },
      payload: "x",
    });
    expect(put.statusCode).toBe(403);
    const del = await viewer.request({
      method: "DELETE",
      url: "/ui/endpoints/files/content/docs/readme.txt",
      headers: { "x-csrf-token": token },
    });
    expect(del.statusCode).toBe(403);
    expect((await admin.request({ url: "/assets/files/viewer-was-here/" })).statusCode).toBe(404);
    expect((await admin.request({ url: "/assets/files/viewer.txt" })).statusCode).toBe(404);
    expect((await admin.request({ url: "/assets/files/docs/readme.txt" })).statusCode).toBe(200);
  });
});
