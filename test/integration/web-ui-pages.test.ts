import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { manualClock } from "../helpers/clock.js";
import { basic, createUser, execute, grant, readOne } from "../helpers/fixtures.js";
import { buildUpack, createUpackFixtures, type PackageSpec } from "../helpers/upack-fixtures.js";

/**
 * Browsing pages of the web UI (issue 16 section 1: Feeds, A package page): /feeds, /feeds/:feed and
 * /feeds/:feed/packages/:name?group=. Packages are uploaded through the upack API, but for the pages
 * of packages and of versions to browse, saved as a form of several packages is; viewers are
 * Anonymous, users signing in with Basic (a session sets the same kind of principal) and a stranger.
 * What a viewer may see is the API's answer for them: the same feeds, the same 404 only for those who
 * may view, and every stored string rendered as text.
 */

let t: TestApp;
let admin: Record<string, string>;
const time = manualClock();
const alice = basic("alice", "alice-password"); // view and download on "secret" only
const bob = basic("bob", "bob-password"); // no grant at all
const carol = basic("carol", "carol-password"); // view on every feed

async function upload(spec: PackageSpec, feed = "main"): Promise<{ sha256: string; sha1: string }> {
  time.advance(1000); // each upload one second later: "last updated" has an order to show
  const res = await t.app.inject({
    method: "PUT",
    url: `/upack/${feed}/upload`,
    headers: admin,
    payload: await buildUpack(spec),
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { sha256: string; sha1: string };
}

function page(url: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: "GET", url, headers });
}

/** Package names as listed on a feed page, in order. */
function listedNames(html: string): string[] {
  return [...html.matchAll(/<td><a href="\/feeds\/[^"]+\/packages\/[^"]+">([^<]+)<\/a>/g)].map((m) => m[1] as string);
}

let toolSha: { sha256: string; sha1: string };

beforeAll(async () => {
  t = await buildTestApp({ clock: time.clock });
  admin = { "x-apikey": t.adminKey };
  const fixtures = createUpackFixtures(t);
  /** Saved in one transaction, each a second after the one before: "last updated" has an order to show. */
  const saveAll = (specs: PackageSpec[]) =>
    fixtures.addVersions(
      "main",
      specs.map((spec) => ({ spec, publishedAt: new Date(time.advance(1000)) })),
    );
  await fixtures.createFeed("main");
  await fixtures.createFeed("secret");
  await fixtures.createFeed("files", "asset");
  await grant(t.database, { anonymous: true, attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"], feed: "main" });
  await grant(t.database, {
    user: await createUser(t.database, "alice", "alice-password"),
    attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"],
    feed: "secret",
  });
  await createUser(t.database, "bob", "bob-password");
  await grant(t.database, {
    user: await createUser(t.database, "carol", "carol-password"),
    attributes: ["Feeds_ViewFeed"],
  });

  // 55 packages: a first page of 50 and a second of 5.
  await saveAll(
    Array.from({ length: 55 }, (_, i) => ({ name: `pkg-${String(i).padStart(2, "0")}`, version: "1.0.0" })),
  );
  await upload({ group: "acme/tools", name: "lib", version: "0.9.0" });
  toolSha = await upload({
    group: "acme/tools",
    name: "tool",
    version: "2.0.0",
    manifest: {
      title: "The Tool",
      description: "Does things.",
      tags: ["cli", "build"],
      dependencies: ["acme/tools/lib:0.9.0", "elsewhere/missing:1.0.0"],
      icon: "package://docs/icon.png",
    },
    files: { "bin/tool.sh": "echo tool", "docs/readme.txt": "read me" },
  });
  // 52 versions of one package: two pages of versions.
  await saveAll(Array.from({ length: 52 }, (_, i) => ({ name: "many", version: `1.${i}.0` })));
  await upload({ name: "hidden", version: "1.0.0" }, "secret");
  // About 110 blobs spooled and stored: a few seconds, but on PostgreSQL each goes to the object
  // store (Azurite), which on a loaded machine took 15 s and more.
}, 120_000);
afterAll(async () => t.close());

describe("GET /feeds", () => {
  it("lists for Anonymous only the feeds Anonymous may view, with type and package count", async () => {
    const res = await page("/feeds");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body).toContain('<a href="/feeds/main">main</a>');
    expect(res.body).not.toContain("secret");
    expect(res.body).toMatch(/<td>universal<\/td>\s*<td class="num">58 packages<\/td>/);
  });

  it("lists for a user the feeds the management API lists them, and nothing for a stranger", async () => {
    const api = await t.app.inject({ method: "GET", url: "/api/management/feeds/list", headers: alice });
    const apiNames = (api.json() as Array<{ name: string }>).map((feed) => feed.name);
    const res = await page("/feeds", alice);
    expect(res.body).toContain("Signed in as <strong>alice</strong>");
    expect([...res.body.matchAll(/<a href="\/feeds\/([^"]+)">/g)].map((m) => m[1])).toEqual(apiNames);
    expect(apiNames).toEqual(["main", "secret"]);

    const everything = await page("/feeds", carol);
    // An asset directory links to its file browser (its /feeds page sends there too).
    expect(everything.body).toContain('<a href="/assets/files/">files</a>');
    expect(everything.body).toMatch(/<td>asset directory<\/td>\s*<td class="num">0 files<\/td>/);

    // What Anonymous may view, every signed-in user may view too (as on the API).
    const stranger = await page("/feeds", bob);
    expect(stranger.statusCode).toBe(200);
    expect([...stranger.body.matchAll(/<a href="\/feeds\/([^"]+)">/g)].map((m) => m[1])).toEqual(["main"]);
  });
});

describe("GET /feeds/:feed", () => {
  it("pages packages by 50 in name order, with next and previous links", async () => {
    const first = await page("/feeds/main");
    expect(first.statusCode).toBe(200);
    const names = listedNames(first.body);
    expect(names).toHaveLength(50);
    // Ordered by group then name, as the API lists them: the empty group first.
    expect(names.slice(0, 3)).toEqual(["many", "pkg-00", "pkg-01"]);
    expect(first.body).toContain('<a href="/feeds/main?page=2" rel="next">');
    expect(first.body).not.toContain('rel="prev"');

    const second = await page("/feeds/main?page=2");
    expect(listedNames(second.body)).toEqual([
      "pkg-49",
      "pkg-50",
      "pkg-51",
      "pkg-52",
      "pkg-53",
      "pkg-54",
      "acme/tools/lib",
      "acme/tools/tool",
    ]);
    expect(second.body).toContain('<a href="/feeds/main" rel="prev">');
    expect(second.body).not.toContain('rel="next"');
  });

  it("sorts by last updated, newest first", async () => {
    const res = await page("/feeds/main?sort=updated");
    expect(listedNames(res.body).slice(0, 3)).toEqual(["many", "acme/tools/tool", "acme/tools/lib"]);
    expect(res.body).toContain('<option value="updated" selected>');
    expect(res.body).toContain('href="/feeds/main?sort=updated&amp;page=2" rel="next"');
  });

  it("searches as the API's search does, in a GET form that submits as one types", async () => {
    const res = await page("/feeds/main?q=TOOL");
    expect(listedNames(res.body)).toEqual(["acme/tools/tool"]);
    expect(res.body).toMatch(/<form method="get" action="\/feeds\/main" class="search" role="search" data-live>/);
    expect(res.body).toContain('value="TOOL"');
    const api = await t.app.inject({ method: "GET", url: "/upack/main/search?query=TOOL", headers: admin });
    expect((api.json() as Array<{ name: string }>).map((p) => p.name)).toEqual(["tool"]);

    const byTitle = await page("/feeds/main?q=the%20tool");
    expect(listedNames(byTitle.body)).toEqual(["acme/tools/tool"]);
    const none = await page("/feeds/main?q=nothing-like-this");
    expect(none.body).toContain("No package matches “nothing-like-this”.");
    const wildcard = await page("/feeds/main?q=%25");
    expect(listedNames(wildcard.body)).toEqual([]);
  });

  it("says how to use the feed: its absolute URL and upack, pgutil and curl commands", async () => {
    const res = await page("/feeds/main", { host: "wharf.example.com", "x-forwarded-proto": "https" });
    expect(res.body).toContain("<code>https://wharf.example.com/upack/main</code>");
    expect(res.body).toContain(
      '<button type="button" data-copy="snippet-pgutil" aria-describedby="use-pgutil" hidden>Copy</button>',
    );
    expect(res.body).toContain("upack push my-app-1.2.0.upack https://wharf.example.com/upack/main --user=api:$KEY");
    expect(res.body).toContain("pgutil sources add --name=wharf --url=https://wharf.example.com/ --api-key=$KEY");
    expect(res.body).toContain(
      "curl -s --upload-file my-app-1.2.0.upack -H &quot;X-ApiKey: $KEY&quot; https://wharf.example.com/upack/main/upload",
    );
  });

  it("redirects Anonymous to sign in, forbids a signed-in stranger, and answers 404 only to who may view", async () => {
    for (const url of [
      "/feeds/secret",
      "/feeds/nope",
      "/feeds/secret/packages/hidden",
      "/feeds/nope/packages/x?group=a/b",
    ]) {
      const anonymous = await page(url);
      expect(anonymous.statusCode, url).toBe(303);
      expect(anonymous.headers.location).toBe(`/sign-in?next=${encodeURIComponent(url)}`);
      const stranger = await page(url, bob);
      expect(stranger.statusCode, url).toBe(403);
      expect(stranger.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(stranger.body).toContain("<h1>Forbidden</h1>");
      expect(stranger.body).toContain("Signed in as <strong>bob</strong>");
    }
    // The API answers the same two cases alike (the need is checked before the feed is read).
    const apiMissing = await t.app.inject({ method: "GET", url: "/upack/nope/packages", headers: bob });
    const apiHidden = await t.app.inject({ method: "GET", url: "/upack/secret/packages", headers: bob });
    expect(apiMissing.statusCode).toBe(apiHidden.statusCode);

    expect((await page("/feeds/secret", alice)).statusCode).toBe(200);
    const missing = await page("/feeds/nope", carol);
    expect(missing.statusCode).toBe(404);
    expect(missing.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(missing.body).toContain("<h1>Not found</h1>");
    expect((await page("/feeds/main/packages/nope", carol)).statusCode).toBe(404);
    expect((await page("/feeds/main/packages/tool", carol)).statusCode).toBe(404); // tool is in group acme/tools
    expect((await page("/feeds/main/packages/tool?group=acme/tools&version=9.9.9", carol)).statusCode).toBe(404);
    expect((await page("/feeds/files/packages/tool", carol)).statusCode).toBe(404);
  });
});

describe("GET /feeds/:feed/packages/:name?group=", () => {
  it("shows the latest version's metadata, digests, counts, files and download links", async () => {
    const download = await t.app.inject({ method: "GET", url: "/upack/main/download/acme/tools/tool/2.0.0" });
    expect(download.statusCode).toBe(200);

    const res = await page("/feeds/main/packages/tool?group=acme%2Ftools");
    expect(res.statusCode).toBe(200);
    const html = res.body;
    expect(html).toContain("<title>acme/tools/tool 2.0.0 · Wharf</title>");
    expect(html).toContain("<h1>The Tool</h1>");
    expect(html).toContain(
      '<img class="icon" src="/ui/upack/main/download-file/acme/tools/tool/2.0.0?path=package%2Fdocs%2Ficon.png"',
    );
    expect(html).toContain("Does things.");
    expect(html).toContain("<li>cli</li><li>build</li>");
    expect(html).toContain('<a href="/feeds/main/packages/lib?group=acme%2Ftools">acme/tools/lib:0.9.0</a>');
    expect(html).toContain("<li>elsewhere/missing:1.0.0</li>");
    expect(html).toContain(`<code>${toolSha.sha256}</code>`);
    expect(html).toMatch(/<dt>SHA-1<\/dt><dd><code>[0-9a-f]{40}<\/code>/);
    expect(html).toMatch(
      /<dt>Published<\/dt><dd>2030-01-01 \d\d:\d\d UTC by Administrator \(WHARF_ADMIN_API_KEY\)<\/dd>/,
    );
    expect(html).toContain("<dt>Downloads</dt><dd>1 of this version, 1 of all versions</dd>");
    expect(html).toContain('href="/ui/upack/main/download/acme/tools/tool/2.0.0" download>');
    expect(html).toContain('href="/ui/upack/main/download/acme/tools/tool/2.0.0?contentOnly=zip" download>');
    expect(html).toContain('href="/ui/upack/main/download/acme/tools/tool/2.0.0?contentOnly=tgz" download>');
    expect(html).toContain(
      '<a href="/ui/upack/main/download-file/acme/tools/tool/2.0.0?path=package%2Fbin%2Ftool.sh">package/bin/tool.sh</a>',
    );
    expect(html).toContain("upack install acme/tools/tool --source=");
    expect(html).toContain("upack push tool-2.0.0.upack ");

    // The links work: the zip of the contents, and one file.
    const zip = await t.app.inject({
      method: "GET",
      url: "/upack/main/download/acme/tools/tool/2.0.0?contentOnly=zip",
    });
    expect(zip.statusCode).toBe(200);
    const file = await t.app.inject({
      method: "GET",
      url: "/ui/upack/main/download-file/acme/tools/tool/2.0.0?path=package%2Fbin%2Ftool.sh",
    });
    expect(file.body).toBe("echo tool");
  });

  it("lists every version newest first, 50 a page, and shows an older one when asked", async () => {
    const first = await page("/feeds/main/packages/many");
    expect(first.body).toContain('<h2>Versions <span class="muted">(52)</span></h2>');
    const versions = [
      ...first.body.matchAll(/<td><a href="\/feeds\/main\/packages\/many[^"]*"[^>]*>([^<]+)<\/a><\/td>/g),
    ].map((m) => m[1]);
    expect(versions).toHaveLength(50);
    expect(versions.slice(0, 2)).toEqual(["1.51.0", "1.50.0"]);
    expect(first.body).toContain('<a href="/feeds/main/packages/many?page=2" rel="next">Older versions</a>');
    const second = await page("/feeds/main/packages/many?page=2");
    expect(second.body).toContain(">1.1.0</a>");
    expect(second.body).toContain(">1.0.0</a>");
    expect(second.body).not.toContain(">1.2.0</a>");

    const older = await page("/feeds/main/packages/MANY?version=1.7.0");
    expect(older.statusCode).toBe(200);
    expect(older.body).toContain("<strong>1.7.0</strong>");
    expect(older.body).toContain('<a href="/feeds/main/packages/many">latest is 1.51.0</a>');
    expect(older.body).toContain('href="/ui/upack/main/download/many/1.7.0" download>');
  });
});

describe("signed in with a session", () => {
  /** Signs in through the sign-in form as a browser does; answers the session cookie header. */
  async function signIn(user: string, password: string): Promise<{ cookie: string }> {
    const form = await page("/sign-in");
    const token = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? "";
    const formCookies = form.cookies.map((c) => `${c.name}=${c.value}`).join("; ");
    const res = await t.app.inject({
      method: "POST",
      url: "/sign-in",
      headers: { cookie: formCookies, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: token, user, password }).toString(),
    });
    const session = res.cookies.find((c) => c.name === "wharf_session");
    expect(session?.value, res.body).toBeTruthy();
    return { cookie: `wharf_session=${session?.value ?? ""}` };
  }

  it("browses what the user may view, and the page's download links take the session (the API does not)", async () => {
    const browser = await signIn("alice", "alice-password");
    const feed = await page("/feeds/secret", browser);
    expect(feed.statusCode).toBe(200);
    expect(feed.body).toContain("Signed in as <strong>alice</strong>");
    const pkg = await page("/feeds/secret/packages/hidden", browser);
    expect(pkg.body).toContain('href="/ui/upack/secret/download/hidden/1.0.0" download>');

    const download = await page("/ui/upack/secret/download/hidden/1.0.0", browser);
    expect(download.statusCode).toBe(200);
    expect(download.headers["content-disposition"]).toContain("hidden.1.0.0.upack");
    expect((await page("/upack/secret/download/hidden/1.0.0", browser)).statusCode).toBe(401);
    expect((await page("/ui/upack/secret/download/hidden/1.0.0")).statusCode).toBe(401);
    expect((await page("/feeds/secret/packages/hidden", await signIn("bob", "bob-password"))).statusCode).toBe(403);
  });
});

describe("escaping", () => {
  const hostile = `<script>alert("x")</script>'"`;
  const escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&quot;";

  it("renders HTML and script in every stored value as text", async () => {
    await upload({
      group: "evil",
      name: "xss",
      version: "1.0.0",
      manifest: { title: hostile, description: hostile },
      files: { "a.txt": "A" },
    });
    // Names, groups, tags and dependencies are refused with such characters on upload; a row written
    // otherwise (an older server, another tool on the database) must still render as text.
    const xss = "(SELECT id FROM upack_packages WHERE name_key = 'xss')";
    const stored = await readOne<{ manifest: string }>(
      t.database,
      `SELECT manifest FROM upack_versions WHERE package_id = ${xss}`,
    );
    const manifest = {
      ...(JSON.parse(stored?.manifest ?? "{}") as object),
      tags: [hostile],
      dependencies: [`${hostile}:1.0`],
      icon: `package://"><script>x</script>`,
    };
    await execute(t.database, `UPDATE upack_versions SET manifest = ? WHERE package_id = ${xss}`, [
      JSON.stringify(manifest),
    ]);
    await execute(t.database, "UPDATE upack_packages SET group_name = ?, name = ? WHERE name_key = 'xss'", [
      hostile,
      hostile,
    ]);

    const feed = await page(`/feeds/main?q=xss`);
    const pkg = await page("/feeds/main/packages/xss?group=evil");
    const search = await page(`/feeds/main?q=${encodeURIComponent(hostile)}`);
    for (const res of [feed, pkg, search]) {
      expect(res.statusCode).toBe(200);
      expect(res.body).not.toContain("<script>alert");
      expect(res.body).not.toContain("<script>x");
      expect(res.body).toContain(escaped);
    }
    expect(pkg.body).toContain(`<h1>${escaped}</h1>`);
    expect(pkg.body).toContain(`<li>${escaped}</li>`);
    expect(pkg.body).toContain(`<li>${escaped}:1.0</li>`);
    expect(pkg.body).toContain("?path=package%2F%22%3E%3Cscript%3Ex%3C%2Fscript%3E");
  });
});
