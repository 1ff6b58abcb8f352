import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deploymentRecordSchema } from "../../src/areas/package-deployment/schemas.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { isPostgres } from "../../src/storage/metadata-db.js";
import { basic, createFeedKey, createSystemKey, createUser, execute, grant } from "../helpers/fixtures.js";
import { type AddedVersion, createUpackFixtures } from "../helpers/upack-fixtures.js";
import { expectText } from "../helpers/responses.js";

/**
 * Package deployment records (docs/seed-api.md C; docs/compat.md 6.2, 2.4): every status of the seed, every
 * way the record and the key arrive, defaults (UserName from the caller, Date from the clock),
 * deployments announced by X-ProGet-Deployment-* headers on downloads, and the listing Wharf adds.
 */

const NOW = "2025-03-04T05:06:07.089Z";
const ADMIN_NAME = "Administrator (WHARF_ADMIN_API_KEY)";
const URL = "/api/package-deployment/";

const RECORD = {
  Application: "Octopus",
  Description: "Release 42 to production",
  Target: "web01",
  FeedName: "main",
  PackageName: "pkg",
  Version: "1.0.0",
};
const REQUIRED = Object.keys(RECORD) as Array<keyof typeof RECORD>;

let t: TestApp;
let admin: Record<string, string>;
/** Served whole from memory, and too large for that (streamed from the store): both ways to send a file. */
let small: AddedVersion;
let large: AddedVersion;

beforeAll(async () => {
  t = await buildTestApp({ clock: { now: () => new Date(NOW) } });
  admin = { "x-apikey": t.adminKey };
  const upack = createUpackFixtures(t);
  for (const feed of ["main", "other", "listing", "downloads", "open"]) await upack.createFeed(feed);
  await upack.createFeed("files", "asset");
  await upack.addVersion("downloads", { group: "acme/tools", name: "App", version: "1.2.3" });
  await upack.addVersion("downloads", { group: "acme/tools", name: "App", version: "2.0.0" });
  small = await upack.addVersion("downloads", { name: "Fresh", version: "1.0.0" });
  // Random bytes do not compress: the package stays over the 256 KiB kept in memory (storage/blob-cache.ts).
  large = await upack.addVersion("downloads", {
    name: "Fresh",
    version: "2.0.0",
    files: { "data.bin": randomBytes(400 * 1024) },
  });
  expect(large.bytes.length).toBeGreaterThan(256 * 1024);
});
afterAll(async () => t.close());

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

function post(
  payload: InjectOptions["payload"],
  headers: Record<string, string> = admin,
  url = URL,
): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: "POST", url, headers, payload });
}
const postJson = (body: Record<string, unknown>, headers: Record<string, string> = admin) =>
  post(JSON.stringify(body), { ...headers, "content-type": "application/json" });
const postForm = (fields: Record<string, string>, headers: Record<string, string> = admin) =>
  post(form(fields), { ...headers, "content-type": "application/x-www-form-urlencoded" });
/** PowerShell's default: form pairs and no Content-Type at all. */
const postBare = (fields: Record<string, string>, headers: Record<string, string> = admin) =>
  post(form(fields), headers);

function expectRecord(res: LightMyRequestResponse): Record<string, unknown> {
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
  return deploymentRecordSchema.strict().parse(res.json());
}

async function list(query: string, headers: Record<string, string> = admin): Promise<Array<Record<string, unknown>>> {
  const res = await t.app.inject({ url: `${URL}?${query}`, headers });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
  return (res.json() as unknown[]).map((item) => deploymentRecordSchema.strict().parse(item));
}

describe("POST /api/package-deployment/: the record in every encoding", () => {
  it("JSON: 200 with the stored record, camelCase with its id", async () => {
    const body = expectRecord(
      await postJson({ ...RECORD, GroupName: "acme/tools", UserName: "deployer", Url: "https://ci.example/run/7" }),
    );
    expect(body).toEqual({
      id: expect.any(Number),
      feedName: "main",
      groupName: "acme/tools",
      packageName: "pkg",
      version: "1.0.0",
      application: "Octopus",
      description: "Release 42 to production",
      target: "web01",
      userName: "deployer",
      url: "https://ci.example/run/7",
      date: NOW,
    });
    const stored = await list("feed=main&group=acme/tools&name=pkg");
    expect(stored.map((r) => r.id)).toContain(body.id);
  });

  it("an application/x-www-form-urlencoded form", async () => {
    const body = expectRecord(await postForm({ ...RECORD, PackageName: "form-pkg" }));
    expect(body).toMatchObject({ packageName: "form-pkg", application: "Octopus", groupName: "" });
  });

  it("form pairs with no Content-Type (PowerShell's default)", async () => {
    const body = expectRecord(await postBare({ ...RECORD, PackageName: "bare-pkg", Description: "a & b = c" }));
    expect(body).toMatchObject({ packageName: "bare-pkg", description: "a & b = c", target: "web01" });
  });

  it("answers with and without the trailing slash", async () => {
    expectRecord(await post(form(RECORD), admin, "/api/package-deployment"));
    expectRecord(await post(form(RECORD), admin, "/api/package-deployment/"));
  });

  it("matches field names in any case, in every encoding", async () => {
    const odd = {
      aPPLICATION: "tool",
      description: "d",
      TARGET: "srv",
      feedname: "MAIN",
      packageNAME: "odd-pkg",
      VeRsIoN: "2.0.0",
      groupname: "G",
      USERNAME: "someone",
      url: "http://x.example/",
      DATE: "2024-01-02T03:04:05Z",
    };
    for (const res of [await postJson(odd), await postForm(odd), await postBare(odd)]) {
      expect(expectRecord(res)).toMatchObject({
        feedName: "main",
        application: "tool",
        target: "srv",
        packageName: "odd-pkg",
        version: "2.0.0",
        groupName: "G",
        userName: "someone",
        url: "http://x.example/",
        date: "2024-01-02T03:04:05.000Z",
      });
    }
  });

  it("posts to a feed of any type (here an asset directory): the package need not be stored in it", async () => {
    expect(
      expectRecord(await postJson({ ...RECORD, FeedName: "Files", PackageName: "Newtonsoft.Json" })),
    ).toMatchObject({ feedName: "files", packageName: "Newtonsoft.Json" });
  });

  it("415 for a body of another type; 413 for raw form pairs over 64 KiB", async () => {
    expectText(await post(form(RECORD), { ...admin, "content-type": "text/csv" }), 415, "form");
    const big = form({ ...RECORD, Description: "x".repeat(70_000) });
    expectText(await post(big, admin), 413);
    // Streamed without a Content-Length: counted while reading.
    expectText(await post(Readable.from([Buffer.from(big)]), { ...admin, "transfer-encoding": "chunked" }), 413);
    // JSON and forms are bounded the same way, by the route's bodyLimit.
    expect((await postForm({ ...RECORD, Description: "x".repeat(70_000) })).statusCode).toBe(413);
    const stored = (await list("feed=main&name=pkg")).length;
    expectText(await postJson({ ...RECORD, Description: "x".repeat(70_000) }), 413);
    expect(await list("feed=main&name=pkg")).toHaveLength(stored);
  });

  it("400 for malformed JSON; feed names with ../ or %2e%2e are names like any other (404)", async () => {
    expectText(await post('{"Application": "x"', { ...admin, "content-type": "application/json" }), 400, "JSON");
    for (const feed of ["../main", "%2e%2e%2fmain", "..", "main/.."]) {
      expectText(await postJson({ ...RECORD, FeedName: decodeURIComponent(feed) }), 404, "was not found");
      expectText(await t.app.inject({ url: `${URL}?feed=${encodeURIComponent(feed)}&name=pkg`, headers: admin }), 404);
    }
  });
});

describe("POST: the key in every transport", () => {
  let feedKey: string;
  beforeAll(async () => {
    feedKey = await createFeedKey(t.database, "main", ["view"], { displayName: "deploy bot" });
  });

  it("X-ApiKey header", async () => {
    expect(expectRecord(await postJson(RECORD, { "x-apikey": feedKey })).userName).toBe("deploy bot");
  });

  it("`key` form field (and `API_Key`), taken out before the record is read", async () => {
    expect(expectRecord(await postForm({ ...RECORD, key: feedKey }, {})).userName).toBe("deploy bot");
    expect(expectRecord(await postForm({ ...RECORD, API_Key: feedKey }, {})).userName).toBe("deploy bot");
  });

  it("JSON root `API_Key`", async () => {
    expect(expectRecord(await postJson({ ...RECORD, API_Key: feedKey }, {})).userName).toBe("deploy bot");
  });

  it("`key` query parameter and Basic api:<key>", async () => {
    expect(expectRecord(await post(form(RECORD), {}, `${URL}?key=${feedKey}`)).userName).toBe("deploy bot");
    expect(expectRecord(await postBare(RECORD, basic("api", feedKey))).userName).toBe("deploy bot");
  });

  it("an unknown key is 403 in any transport", async () => {
    expectText(await postJson(RECORD, { "x-apikey": "not-a-key-1234" }), 403, PERMISSION_DENIED_MESSAGE);
    expectText(await postJson({ ...RECORD, API_Key: "not-a-key-1234" }, {}), 403, PERMISSION_DENIED_MESSAGE);
    expectText(await postForm({ ...RECORD, key: "not-a-key-1234" }, {}), 403, PERMISSION_DENIED_MESSAGE);
  });
});

describe("POST: defaults", () => {
  it("UserName: the user, the key's display name, or the record's own", async () => {
    const userId = await createUser(t.database, "alice", "s3cret-pass");
    await grant(t.database, { user: userId, attributes: ["Feeds_DownloadPackage"], feed: "main" });
    expect(expectRecord(await postBare(RECORD, basic("alice", "s3cret-pass"))).userName).toBe("alice");
    expect(expectRecord(await postBare(RECORD)).userName).toBe(ADMIN_NAME);
    const named = await createSystemKey(t.database, ["feeds"], { displayName: "pipeline" });
    expect(expectRecord(await postBare(RECORD, { "x-apikey": named })).userName).toBe("pipeline");
    expect(expectRecord(await postBare({ ...RECORD, UserName: "bob" })).userName).toBe("bob");
    // Blank is absent.
    expect(expectRecord(await postBare({ ...RECORD, UserName: "  " })).userName).toBe(ADMIN_NAME);
  });

  it("Date: now from the clock; any ISO 8601 form stored as yyyy-MM-ddTHH:mm:ss.fffZ", async () => {
    expect(expectRecord(await postJson(RECORD)).date).toBe(NOW);
    const cases: Array<[string, string]> = [
      ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.000Z"],
      ["2024-01-02T03:04:05.1234567+01:00", "2024-01-02T02:04:05.123Z"],
      ["2024-01-02T03:04:05-0530", "2024-01-02T08:34:05.000Z"],
      ["2024-01-02T03:04:05", "2024-01-02T03:04:05.000Z"],
      ["2024-01-02 03:04", "2024-01-02T03:04:00.000Z"],
      ["2024-01-02", "2024-01-02T00:00:00.000Z"],
      ["/Date(1704164645000)/", "2024-01-02T03:04:05.000Z"],
    ];
    for (const [given, stored] of cases) {
      expect(expectRecord(await postJson({ ...RECORD, Date: given })).date, given).toBe(stored);
    }
  });
});

describe("POST: 400 naming the field", () => {
  it("each missing required field, in every encoding", async () => {
    for (const field of REQUIRED) {
      const fields: Record<string, string> = { ...RECORD };
      delete fields[field];
      for (const res of [await postJson(fields), await postForm(fields), await postBare(fields)]) {
        expectText(res, 400, `'${field}'`);
      }
      expectText(await postJson({ ...RECORD, [field]: "  " }), 400, `'${field}'`);
    }
  });

  it("no body at all names every required field", async () => {
    const res = await post(undefined);
    expectText(res, 400, "Missing required fields");
    for (const field of REQUIRED) expect(res.body).toContain(`'${field}'`);
  });

  it("an invalid Date", async () => {
    for (const date of ["yesterday", "2024-02-30", "2024-13-01T00:00:00Z", "2024-01-02T25:00:00Z", "02/01/2024"]) {
      expectText(await postJson({ ...RECORD, Date: date }), 400, "'Date'");
    }
  });

  it("an invalid Url: not absolute, or not http(s)", async () => {
    for (const url of ["not a url", "/relative/path", "ftp://files.example/x", "javascript:alert(1)"]) {
      expectText(await postForm({ ...RECORD, Url: url }), 400, "'Url'");
    }
  });

  it("a field given twice, a value that is not a string, a body that is not an object", async () => {
    expectText(await postBare({ ...RECORD, target: "again" }), 400, "'Target'");
    expectText(
      await post(`${form(RECORD)}&Version=2.0.0`, { ...admin, "content-type": "application/x-www-form-urlencoded" }),
      400,
      "'Version'",
    );
    expectText(await postJson({ ...RECORD, Version: 1 }), 400, "'Version'");
    expectText(await post("[1,2]", { ...admin, "content-type": "application/json" }), 400);
  });
});

describe("POST: access (401, 403, 404)", () => {
  it("404 for an unknown feed", async () => {
    expectText(await postJson({ ...RECORD, FeedName: "no-such-feed" }), 404, "no-such-feed");
  });

  it("403 for a feed key without Feeds_DownloadPackage, or for another feed", async () => {
    const addOnly = await createFeedKey(t.database, "main", ["add", "delete"]);
    expectText(await postJson(RECORD, { "x-apikey": addOnly }), 403, PERMISSION_DENIED_MESSAGE);
    const otherFeed = await createFeedKey(t.database, "other", ["view"]);
    expectText(await postJson(RECORD, { "x-apikey": otherFeed }), 403, PERMISSION_DENIED_MESSAGE);
    expectRecord(await postJson({ ...RECORD, FeedName: "other" }, { "x-apikey": otherFeed }));
  });

  it("403 for a System key without the feeds API; the feeds and package-deployment scopes pass", async () => {
    const configuration = await createSystemKey(t.database, ["configuration", "releases"]);
    expectText(await postJson(RECORD, { "x-apikey": configuration }), 403, PERMISSION_DENIED_MESSAGE);
    expectRecord(await postJson(RECORD, { "x-apikey": await createSystemKey(t.database, ["feeds"]) }));
    expectRecord(await postJson(RECORD, { "x-apikey": await createSystemKey(t.database, ["package-deployment"]) }));
  });

  it("403 for a user without the privilege on that feed", async () => {
    const userId = await createUser(t.database, "viewer", "viewer-pass");
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "main" });
    await grant(t.database, { user: userId, attributes: ["Feeds_DownloadPackage"], feed: "other" });
    expectText(await postJson(RECORD, basic("viewer", "viewer-pass")), 403, PERMISSION_DENIED_MESSAGE);
    expectRecord(await postJson({ ...RECORD, FeedName: "other" }, basic("viewer", "viewer-pass")));
  });

  it("401 with a Basic challenge for Anonymous without the grant; 200 once granted, with no UserName", async () => {
    const anonymous = await postBare({ ...RECORD, FeedName: "open" }, {});
    expectText(anonymous, 401);
    expect(anonymous.headers["www-authenticate"]).toBe('Basic realm="Wharf"');
    await grant(t.database, { anonymous: true, attributes: ["Feeds_DownloadPackage"], feed: "open" });
    expect(expectRecord(await postBare({ ...RECORD, FeedName: "open" }, {})).userName).toBeNull();
    expectText(await postBare(RECORD, {}), 401);
  });
});

describe("X-ProGet-Deployment-* headers on downloads", () => {
  const DEPLOY = {
    "x-proget-deployment-application": "upack-cli",
    "x-proget-deployment-description": "installed by CI",
    "x-proget-deployment-target": "build-agent-3",
  };
  const recorded = (version?: string) =>
    list(`feed=downloads&group=acme/tools&name=App${version === undefined ? "" : `&version=${version}`}`);
  const download = (url: string, headers: Record<string, string> = {}, method: "GET" | "HEAD" = "GET") =>
    t.app.inject({ method, url, headers: { ...admin, ...headers } });

  it("records one deployment of the resolved version, with the optional headers", async () => {
    const before = (await recorded()).length;
    const res = await download("/upack/DOWNLOADS/download/ACME/tools/app/1.2.3", {
      ...DEPLOY,
      "x-proget-deployment-url": "https://ci.example/job/9",
      "x-proget-deployment-username": "ci-user",
      "x-proget-deployment-date": "2024-05-06T07:08:09+02:00",
    });
    expect(res.statusCode).toBe(200);
    const records = await recorded();
    expect(records).toHaveLength(before + 1);
    expect(records[0]).toEqual({
      id: expect.any(Number),
      feedName: "downloads",
      groupName: "acme/tools",
      packageName: "App",
      version: "1.2.3",
      application: "upack-cli",
      description: "installed by CI",
      target: "build-agent-3",
      userName: "ci-user",
      url: "https://ci.example/job/9",
      date: "2024-05-06T05:08:09.000Z",
    });
  });

  it("?latest records the version it resolved to; defaults come from the caller and the clock", async () => {
    const before = (await recorded("2.0.0")).length;
    expect((await download("/upack/downloads/download/acme/tools/App?latest", DEPLOY)).statusCode).toBe(200);
    const records = await recorded("2.0.0");
    expect(records).toHaveLength(before + 1);
    expect(records.find((r) => r.date === NOW)).toMatchObject({ userName: ADMIN_NAME, url: null, version: "2.0.0" });
  });

  it("records for pgutil's /api/packages download and for contentOnly downloads too", async () => {
    const before = (await recorded("1.2.3")).length;
    const pgutil = await download("/api/packages/downloads/download?group=acme/tools&name=App&version=1.2.3", DEPLOY);
    expect(pgutil.statusCode).toBe(200);
    expect((await download("/upack/downloads/download/acme/tools/App/1.2.3?contentOnly=zip", DEPLOY)).statusCode).toBe(
      200,
    );
    expect(await recorded("1.2.3")).toHaveLength(before + 2);
  });

  it("records nothing for HEAD, 304, a range further in, or a failed download", async () => {
    const url = "/upack/downloads/download/acme/tools/App/1.2.3";
    const etag = (await download(url)).headers.etag as string;
    const before = (await recorded()).length;
    expect((await download(url, DEPLOY, "HEAD")).statusCode).toBe(200);
    expect((await download(url, { ...DEPLOY, "if-none-match": etag })).statusCode).toBe(304);
    expect((await download(url, { ...DEPLOY, range: "bytes=10-" })).statusCode).toBe(206);
    expect((await download(url, { ...DEPLOY, range: "bytes=99999999-" })).statusCode).toBe(416);
    expect((await download("/upack/downloads/download/acme/tools/App/9.9.9", DEPLOY)).statusCode).toBe(404);
    expect(await recorded()).toHaveLength(before);
    // A range from the first byte starts a download: recorded once.
    expect((await download(url, { ...DEPLOY, range: "bytes=0-9" })).statusCode).toBe(206);
    expect(await recorded()).toHaveLength(before + 1);
  });

  it("an incomplete or invalid set never fails the download and records nothing", async () => {
    const url = "/upack/downloads/download/acme/tools/App/1.2.3";
    const before = (await recorded()).length;
    const sets: Array<Record<string, string>> = [
      { "x-proget-deployment-application": "only-this" },
      { "x-proget-deployment-application": "a", "x-proget-deployment-target": "t" },
      { "x-proget-deployment-url": "https://x.example/" },
      { ...DEPLOY, "x-proget-deployment-date": "not a date" },
      { ...DEPLOY, "x-proget-deployment-url": "file:///etc/passwd" },
      { ...DEPLOY, "x-proget-deployment-description": "" },
    ];
    for (const headers of sets) {
      const res = await download(url, headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(200);
      expect(res.rawPayload.length).toBeGreaterThan(0);
    }
    expect(await recorded()).toHaveLength(before);
  });
});

describe("X-ProGet-Deployment-* headers: recorded before the body goes out", () => {
  const DEPLOY = {
    "x-proget-deployment-application": "upack-cli",
    "x-proget-deployment-description": "installed by CI",
  };
  const fresh = () => list("feed=downloads&name=Fresh");
  /** A way a download sends its body; `body` is the one expected when it is the package file. */
  type Way = readonly [url: string, headers: Record<string, string>, body: Buffer | undefined];
  const fromMemory = (): Way => ["/upack/downloads/download/Fresh/1.0.0", {}, small.bytes];
  const ways = (): Way[] => [
    fromMemory(),
    ["/upack/downloads/download/Fresh/2.0.0", {}, large.bytes],
    ["/upack/downloads/download/Fresh/2.0.0", { range: "bytes=0-" }, large.bytes],
    ["/upack/downloads/download/Fresh/2.0.0?contentOnly=tgz", {}, undefined],
    ["/api/packages/downloads/download?name=Fresh&version=1.0.0", {}, small.bytes],
  ];

  /** Downloads the whole body, deployed to `target`. */
  async function downloadWhole(way: Way, target: string): Promise<void> {
    const [url, headers, body] = way;
    const res = await t.app.inject({
      url,
      headers: { ...admin, ...DEPLOY, ...headers, "x-proget-deployment-target": target },
    });
    expect(res.statusCode, url).toBe(headers.range === undefined ? 200 : 206);
    if (body !== undefined) expect(res.rawPayload.equals(body), url).toBe(true);
    else expect(res.rawPayload.length, url).toBeGreaterThan(0);
  }

  it("a listing made as soon as the body is read shows the deployment, every time, on every way", async () => {
    // On PostgreSQL a record written once the response had started lost this race now and then.
    let recorded = (await fresh()).length;
    for (let round = 0; round < 3; round++) {
      for (const way of ways()) {
        const target = `agent-${round}-${recorded}`;
        await downloadWhole(way, target);
        const targets = (await fresh()).map((r) => r.target);
        expect(targets, way[0]).toHaveLength(++recorded);
        expect(targets, way[0]).toContain(target);
      }
    }
  });

  it("a failure to record never fails the download: sent whole, nothing recorded", async () => {
    const refused = "refused-target";
    const allowAgain = await refuseDeploymentsTo(refused);
    try {
      const before = (await fresh()).length;
      for (const way of ways()) await downloadWhole(way, refused);
      expect(await fresh()).toHaveLength(before);
      // Only that target is refused: the database does store the others.
      await downloadWhole(fromMemory(), "accepted");
      expect(await fresh()).toHaveLength(before + 1);
    } finally {
      await allowAgain();
    }
  });
});

/** A trigger that makes the database refuse every deployment record naming `target`; the function drops it. */
async function refuseDeploymentsTo(target: string): Promise<() => Promise<void>> {
  const condition = `NEW.target = '${target}'`;
  const run = async (...statements: string[]) => {
    for (const sql of statements) await execute(t.database, sql, []);
  };
  if (isPostgres(t.database)) {
    await run(
      `CREATE FUNCTION refuse_deployment() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF ${condition} THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`,
      "CREATE TRIGGER refuse_deployment BEFORE INSERT ON package_deployments FOR EACH ROW EXECUTE FUNCTION refuse_deployment()",
    );
    return () => run("DROP TRIGGER refuse_deployment ON package_deployments", "DROP FUNCTION refuse_deployment()");
  }
  await run(
    `CREATE TRIGGER refuse_deployment BEFORE INSERT ON package_deployments WHEN ${condition}
     BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
  );
  return () => run("DROP TRIGGER refuse_deployment");
}

describe("GET /api/package-deployment/: listing", () => {
  const at = (date: string, extra: Record<string, string> = {}) =>
    postJson({ ...RECORD, FeedName: "listing", PackageName: "Lib", Date: date, ...extra });

  beforeAll(async () => {
    // Posted out of order: the listing sorts by deployed date, not by arrival.
    for (const res of [
      await at("2024-01-01T00:00:00Z", { Version: "1.0.0", Target: "jan" }),
      await at("2024-03-01T00:00:00Z", { Version: "1.0.0", Target: "mar" }),
      await at("2024-02-01T00:00:00Z", { Version: "2.0.0", Target: "feb" }),
      await at("2024-04-01T00:00:00Z", { Version: "1.0.0", Target: "grouped", GroupName: "Team" }),
      await at("2024-05-01T00:00:00Z", { Version: "1.0.0", Target: "other-name", PackageName: "Other" }),
    ]) {
      expectRecord(res);
    }
  });

  const targets = (records: Array<Record<string, unknown>>) => records.map((r) => r.target);

  it("newest deployment first; the empty group unless one is named; names in any case", async () => {
    expect(targets(await list("feed=listing&name=lib"))).toEqual(["mar", "feb", "jan"]);
    expect(targets(await list("feed=LISTING&name=LIB&group="))).toEqual(["mar", "feb", "jan"]);
    expect(targets(await list("feed=listing&name=Lib&group=team"))).toEqual(["grouped"]);
    expect(targets(await list("Feed=listing&Name=other"))).toEqual(["other-name"]);
  });

  it("filters by version, and bounds the answer with count", async () => {
    expect(targets(await list("feed=listing&name=Lib&version=1.0.0"))).toEqual(["mar", "jan"]);
    expect(targets(await list("feed=listing&name=Lib&version=3.0.0"))).toEqual([]);
    expect(targets(await list("feed=listing&name=Lib&count=1"))).toEqual(["mar"]);
    expectText(await t.app.inject({ url: `${URL}?feed=listing&name=Lib&count=many`, headers: admin }), 400, "count");
  });

  it("400 without feed or name; 404 for an unknown feed", async () => {
    expectText(await t.app.inject({ url: `${URL}?name=Lib`, headers: admin }), 400, "'feed'");
    expectText(await t.app.inject({ url: `${URL}?feed=listing`, headers: admin }), 400, "'name'");
    expectText(await t.app.inject({ url: `${URL}?feed=nope&name=Lib`, headers: admin }), 404);
  });

  it("needs Feeds_ViewFeed on the feed: 401 Anonymous, 403 other keys and users", async () => {
    const url = `${URL}?feed=listing&name=Lib`;
    expectText(await t.app.inject({ url }), 401);
    const otherFeed = await createFeedKey(t.database, "other", ["view"]);
    expectText(await t.app.inject({ url, headers: { "x-apikey": otherFeed } }), 403, PERMISSION_DENIED_MESSAGE);
    const noFeeds = await createSystemKey(t.database, ["configuration"]);
    expectText(await t.app.inject({ url, headers: { "x-apikey": noFeeds } }), 403, PERMISSION_DENIED_MESSAGE);
    const userId = await createUser(t.database, "reader", "reader-pass");
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "listing" });
    expect(targets(await list("feed=listing&name=Lib", basic("reader", "reader-pass")))).toHaveLength(3);
    expect(
      await list("feed=listing&name=Lib", { "x-apikey": await createFeedKey(t.database, "listing", ["view"]) }),
    ).toHaveLength(3);
  });
});

describe("the count in the version's data (issue point 3)", () => {
  it("shows each version's deployments in /upack versions, refreshed as records arrive", async () => {
    const versions = async () => {
      const res = await t.app.inject({
        method: "GET",
        url: "/upack/downloads/versions?group=acme/tools&name=app",
        headers: admin,
      });
      expect(res.statusCode).toBe(200);
      return Object.fromEntries(
        (res.json() as Array<{ version: string; deploymentCount: number }>).map((v) => [v.version, v.deploymentCount]),
      );
    };
    const before = await versions();
    const record = { ...RECORD, FeedName: "downloads", GroupName: "acme/tools", PackageName: "APP", Version: "2.0.0" };
    expect((await postJson(record)).statusCode).toBe(200);
    expect((await postJson({ ...record, Target: "web-02" })).statusCode).toBe(200);
    const after = await versions();
    expect(after["2.0.0"]).toBe((before["2.0.0"] ?? 0) + 2);
    expect(after["1.2.3"]).toBe(before["1.2.3"]);

    const one = await t.app.inject({
      method: "GET",
      url: "/upack/downloads/versions?group=acme/tools&name=App&version=2.0.0",
      headers: admin,
    });
    expect(one.json().deploymentCount).toBe(after["2.0.0"]);
  });
});
