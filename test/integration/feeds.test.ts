import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import {
  basic,
  createFeedKey,
  createPersonalKey,
  createSystemKey,
  createUser,
  daysFromNow,
  grant,
  newKey,
  readOne,
} from "../helpers/fixtures.js";
import { expectJson, expectText } from "../helpers/responses.js";

const FEEDS = "/api/management/feeds";
type Method = NonNullable<InjectOptions["method"]>;

/** pgutil cannot read `null` into its members (docs/compat.md 0.2): no null anywhere in a Feed. */
function expectNoNulls(value: unknown, path = "feed"): void {
  expect(value, path).not.toBeNull();
  if (!value || typeof value !== "object") return;
  for (const [k, v] of Object.entries(value)) expectNoNulls(v, `${path}.${k}`);
}

const BOOLEAN_MEMBERS = [
  "active",
  "cacheConnectors",
  "symbolServerEnabled",
  "stripSymbols",
  "stripSource",
  "stripSignature",
  "useApiV3",
  "canPublish",
  "packageStatisticsEnabled",
  "restrictPackageStatistics",
  "deploymentRecordsEnabled",
  "usageRecordsEnabled",
  "vulnerabilitiesEnabled",
  "licensesEnabled",
  "useWithProjects",
  "retentionRulesEnabled",
];
const ARRAY_MEMBERS = [
  "alternateNames",
  "allowedLicenses",
  "blockedLicenses",
  "connectors",
  "vulnerabilitySources",
  "retentionRules",
];
const OBJECT_MEMBERS = ["packageFilters", "packageAccessRules", "variables", "variableDictionary"];

function expectFeedShape(feed: Record<string, unknown>): void {
  expectNoNulls(feed);
  expect(typeof feed.name).toBe("string");
  expect(typeof feed.feedType).toBe("string");
  expect(typeof feed.endpointUrl).toBe("string");
  for (const m of BOOLEAN_MEMBERS) expect(typeof feed[m], m).toBe("boolean");
  for (const m of ARRAY_MEMBERS) expect(Array.isArray(feed[m]), m).toBe(true);
  for (const m of OBJECT_MEMBERS)
    expect(feed[m] && typeof feed[m] === "object" && !Array.isArray(feed[m]), m).toBe(true);
  expect(feed.variables).toEqual(feed.variableDictionary);
  expect(feed).not.toHaveProperty("id");
  expect(feed).not.toHaveProperty("storageKey");
}

describe("feed management: a feed's life (create, read, conflict, bad input, update, delete)", () => {
  let t: TestApp;
  let admin: Record<string, string>;
  const call = (method: Method, url: string, payload?: unknown, headers: Record<string, string> = admin) =>
    t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });

  beforeAll(async () => {
    t = await buildTestApp();
    admin = { "x-apikey": t.adminKey };
  });
  afterAll(async () => t.close());

  it("creates a feed as pgutil does (POST, type in the user's case) and answers 201 with the full Feed", async () => {
    const res = await call("POST", `${FEEDS}/create`, { name: "Main", feedType: "Universal" });
    const feed = expectJson(res, 201) as Record<string, unknown>;
    expectFeedShape(feed);
    expect(feed).toMatchObject({
      name: "Main",
      feedType: "universal",
      alternateNames: [],
      active: true,
      canPublish: true,
      endpointUrl: "http://localhost:80/upack/Main",
      variables: {},
      packageFilters: {},
    });
    for (const absent of ["description", "dropPath", "packagesPath", "packageStore", "allowUnknownLicenses"]) {
      expect(feed).not.toHaveProperty(absent);
    }
    const row = await readOne<{ storage_key: string }>(t.database, "SELECT storage_key FROM feeds WHERE name = 'Main'");
    expect(row?.storage_key).toMatch(/^[0-9a-f]{32}$/);
  });

  it("creates with PUT too, maps legacy and mixed-case types, and computes endpointUrl per type", async () => {
    const cases: [string, string, string][] = [
      ["legacy", "ProGet", "http://localhost:80/upack/legacy"],
      ["files", "ASSET", "http://localhost:80/endpoints/files"],
      ["rompy", "romp", "http://localhost:80/upack/rompy"],
    ];
    for (const [name, feedType, url] of cases) {
      const feed = expectJson(await call("PUT", `${FEEDS}/create`, { name, feedType }), 201) as Record<string, unknown>;
      expect(feed.feedType).toBe(feedType === "ProGet" ? "universal" : feedType.toLowerCase());
      expect(feed.endpointUrl).toBe(url);
    }
  });

  it("builds endpointUrl from X-Forwarded-* headers (no WHARF_BASE_URL set) and ignores a malformed host", async () => {
    const forwarded = await call("GET", `${FEEDS}/get/main`, undefined, {
      ...admin,
      "x-forwarded-proto": "https",
      "x-forwarded-host": "packages.example.com",
    });
    expect((expectJson(forwarded, 200) as { endpointUrl: string }).endpointUrl).toBe(
      "https://packages.example.com/upack/Main",
    );
    const evil = await call("GET", `${FEEDS}/get/main`, undefined, {
      ...admin,
      "x-forwarded-host": "evil.com/<script>",
    });
    expect((expectJson(evil, 200) as { endpointUrl: string }).endpointUrl).toBe("http://localhost:80/upack/Main");
  });

  it("creates a feed with every setting Wharf acts on and reads the same settings back", async () => {
    // Settings Wharf does not act on are refused unless off (feeds-not-implemented.test.ts).
    const input = {
      name: "full",
      feedType: "universal",
      alternateNames: ["full-old", "Full-Older"],
      description: "All the settings",
      active: false,
      cacheConnectors: false,
      allowUnknownLicenses: true,
      allowedLicenses: [],
      blockedLicenses: [],
      symbolServerEnabled: false,
      retentionRules: [],
      packageFilters: {},
      packageAccessRules: {},
      variables: { Owner: "team-a" },
      retentionRulesEnabled: false,
      replication: { clientMode: "disabled" },
      endpointUrl: "http://ignored",
      canPublish: false,
    };
    const feed = expectJson(await call("POST", `${FEEDS}/create`, input), 201) as Record<string, unknown>;
    expectFeedShape(feed);
    expect(feed).toMatchObject({
      alternateNames: ["full-old", "Full-Older"],
      description: "All the settings",
      active: false,
      canPublish: false, // an inactive feed takes no packages
      cacheConnectors: false,
      allowUnknownLicenses: true,
      allowedLicenses: [],
      blockedLicenses: [],
      symbolServerEnabled: false,
      packageFilters: {},
      packageAccessRules: {},
      variables: { Owner: "team-a" },
      variableDictionary: { Owner: "team-a" },
      retentionRulesEnabled: false,
      retentionRules: [],
      endpointUrl: "http://localhost:80/upack/full",
    });
    expect(feed).not.toHaveProperty("replication");
    const again = expectJson(await call("GET", `${FEEDS}/get/FULL-OLDER`), 200);
    expect(again).toEqual(feed);
  });

  it("reads a feed by name or alternate name, case-insensitively, with GET, POST and HEAD", async () => {
    for (const name of ["main", "MAIN", "Main"]) {
      expect((expectJson(await call("GET", `${FEEDS}/get/${name}`), 200) as { name: string }).name).toBe("Main");
    }
    expect((expectJson(await call("POST", `${FEEDS}/get/full-old`), 200) as { name: string }).name).toBe("full");
    const head = await call("HEAD", `${FEEDS}/get/main`);
    expect(head.statusCode).toBe(200);
    expect(head.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(head.body).toBe("");
  });

  it("pretty-prints with ?indent and not with ?indent=false", async () => {
    const pretty = await call("GET", `${FEEDS}/get/main?indent`);
    expect(pretty.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(pretty.body).toContain('\n  "name": "Main"');
    expect(JSON.parse(pretty.body)).toEqual(expectJson(await call("GET", `${FEEDS}/get/main`), 200));
    expect((await call("GET", `${FEEDS}/list?Indent=true`)).body.startsWith("[\n")).toBe(true);
    expect((await call("GET", `${FEEDS}/get/main?indent=false`)).body).not.toContain("\n");
  });

  it("lists every feed for the admin, sorted by name, as a top-level array", async () => {
    const list = expectJson(await call("GET", `${FEEDS}/list`), 200) as { name: string }[];
    expect(list.map((f) => f.name)).toEqual(["files", "full", "legacy", "Main", "rompy"]);
    for (const feed of list) expectFeedShape(feed as Record<string, unknown>);
    const head = await call("HEAD", `${FEEDS}/list`);
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe("");
  });

  it("answers 404 in plain text for an unknown feed", async () => {
    expectText(await call("GET", `${FEEDS}/get/nope`), 404, "The feed 'nope' was not found.");
    expectText(await call("POST", `${FEEDS}/update/nope`, { description: "x" }), 404, "was not found");
    expectText(await call("DELETE", `${FEEDS}/delete/nope`), 404, "was not found");
  });

  it("answers hostile names in the URL with clean 4xx, never a 500", async () => {
    expectText(
      await call("GET", `${FEEDS}/get/..%2F..%2Fetc%2Fpasswd`),
      404,
      "The feed '../../etc/passwd' was not found.",
    );
    expectText(await call("GET", `${FEEDS}/get/%00`), 404, "The feed '?' was not found.");
    expectText(await call("GET", `${FEEDS}/get/%2e%2e`), 404);
    expectText(await call("DELETE", `${FEEDS}/delete/%2e%2e`), 404);
    expectText(await call("POST", `${FEEDS}/update/..%2Fmain`, { description: "x" }), 404, "was not found");
    const long = await call("GET", `${FEEDS}/get/${"a".repeat(3000)}`);
    expect(long.statusCode).toBe(414);
    expect((await call("GET", `${FEEDS}/get/%ZZ`)).statusCode).toBe(400);
  });

  it("refuses names already used, primary or alternate, case-insensitively (409)", async () => {
    expectText(
      await call("POST", `${FEEDS}/create`, { name: "MAIN", feedType: "universal" }),
      409,
      "a feed named 'Main' already exists",
    );
    expectText(
      await call("POST", `${FEEDS}/create`, { name: "FULL-OLD", feedType: "universal" }),
      409,
      "the name 'FULL-OLD' is already an alternate name of feed 'full'",
    );
    expectText(
      await call("POST", `${FEEDS}/create`, { name: "fresh", feedType: "universal", alternateNames: ["main"] }),
      409,
      "a feed named 'Main' already exists",
    );
    expectText(
      await call("POST", `${FEEDS}/update/legacy`, { alternateNames: ["full-older"] }),
      409,
      "alternate name of feed 'full'",
    );
    expectText(await call("POST", `${FEEDS}/update/legacy`, { name: "main" }), 409, "already exists");
    expectText(await call("GET", `${FEEDS}/get/fresh`), 404);
  });

  it.each([
    ["no name", { feedType: "universal" }, "feed name is required"],
    ["null name", { name: null, feedType: "universal" }, "feed name is required"],
    ["blank name", { name: "  ", feedType: "universal" }, "feed name is required"],
    ["no type", { name: "x1" }, "a valid feed type is required"],
    ["unknown type", { name: "x1", feedType: "cobol" }, "a valid feed type is required"],
    ["path traversal", { name: "../etc", feedType: "universal" }, "may contain only"],
    ["encoded traversal", { name: "%2e%2e", feedType: "universal" }, "may contain only"],
    ["dot-dot", { name: "..", feedType: "universal" }, "cannot be '..'"],
    ["slash", { name: "a/b", feedType: "universal" }, "may contain only"],
    ["space", { name: "a b", feedType: "universal" }, "may contain only"],
    ["too long", { name: "a".repeat(101), feedType: "universal" }, "at most 100"],
    ["way too long", { name: "a".repeat(5000), feedType: "universal" }, "name"],
    ["number name", { name: 42, feedType: "universal" }, "name"],
    ["boolean as string", { name: "x1", feedType: "universal", active: "yes" }, "active"],
    ["string list with a number", { name: "x1", feedType: "universal", allowedLicenses: [1] }, "allowedLicenses"],
    ["object as list", { name: "x1", feedType: "universal", connectors: { a: 1 } }, "connectors"],
    ["array as filters", { name: "x1", feedType: "universal", packageFilters: ["A.*"] }, "packageFilters"],
    ["empty pattern", { name: "x1", feedType: "universal", packageFilters: { f: "A.*, !" } }, "packageFilters['f']"],
    ["XML filter", { name: "x1", feedType: "universal", packageFilters: { f: "<X Assembly='y'/>" } }, "persisted-XML"],
    [
      "bad filter name",
      { name: "x1", feedType: "universal", packageFilters: { __proto__x: "A" } },
      "must start with a letter",
    ],
    ["bad variable name", { name: "x1", feedType: "universal", variables: { "-x": "1" } }, "variables: name '-x'"],
    [
      "negation in retention",
      { name: "x1", feedType: "universal", retentionRules: [{ keepPackageIds: ["!a"] }] },
      "negation",
    ],
    [
      "fractional count",
      { name: "x1", feedType: "universal", retentionRules: [{ keepVersionsCount: 1.5 }] },
      "keepVersionsCount",
    ],
    [
      "negative count",
      { name: "x1", feedType: "universal", retentionRules: [{ keepUsedWithinDays: -1 }] },
      "keepUsedWithinDays",
    ],
    ["bad alternate", { name: "x1", feedType: "universal", alternateNames: ["ok", "not ok"] }, "alternateNames"],
    ["packagesPath", { name: "x1", feedType: "universal", packagesPath: "/srv/packages" }, "content-addressed blobs"],
    ["dropPath", { name: "x1", feedType: "universal", dropPath: "/srv/drop" }, "dropPath is not supported"],
    [
      "s3 store with an instance role",
      { name: "x1", feedType: "universal", packageStore: s3Xml().replace("/>", 'InstanceRole="r" />') },
      "InstanceRole and UseInstanceProfile are not supported",
    ],
    ["malformed XML", { name: "x1", feedType: "universal", packageStore: "<DiskPackageStore" }, "packageStore"],
    ["XML entities", { name: "x1", feedType: "universal", packageStore: entityXml() }, "packageStore"],
    [
      "disk path in XML",
      { name: "x1", feedType: "universal", packageStore: diskXml("/srv/x") },
      "StoragePath is not supported",
    ],
  ])("refuses %s with a plain-text 400", async (_case, body, message) => {
    expectText(await call("POST", `${FEEDS}/create`, body), 400, message);
    expect((await call("GET", `${FEEDS}/get/x1`)).statusCode).toBe(404);
  });

  it("refuses references to connectors and vulnerability sources that do not exist (422)", async () => {
    const base = { name: "x2", feedType: "universal" };
    expectText(
      await call("POST", `${FEEDS}/create`, { ...base, connectors: ["nuget.org"] }),
      422,
      "connector 'nuget.org' does not exist",
    );
    expectText(
      await call("POST", `${FEEDS}/create`, { ...base, vulnerabilitySources: ["OSV"] }),
      422,
      "vulnerability source 'OSV' does not exist",
    );
    // Invalid input is reported before missing references.
    expectText(
      await call("POST", `${FEEDS}/create`, { ...base, feedType: "x", connectors: ["a"] }),
      400,
      "a valid feed type is required",
    );
    expectJson(await call("POST", `${FEEDS}/create`, { ...base, connectors: [] }), 201);
  });

  it("answers malformed, oversized and non-JSON bodies cleanly, never with a 500", async () => {
    const raw = (payload: string, type = "application/json") =>
      t.app.inject({ method: "POST", url: `${FEEDS}/create`, headers: { ...admin, "content-type": type }, payload });
    expectText(await raw("{not json"), 400);
    expectText(await raw(`{"name":"${"a".repeat(2 * 1024 * 1024)}"}`), 413);
    expectText(await raw(`${"[".repeat(100_000)}${"]".repeat(100_000)}`), 400);
    expectText(await raw('"just a string"'), 400);
    expectText(await raw("[1,2]"), 400);
    expectText(await raw(""), 400, "feed name is required");
    expectText(await raw("name=x&feedType=universal", "text/plain"), 415, "application/json");
    expectText(await raw("<feed/>", "application/xml"), 415);
    const noType = await t.app.inject({
      method: "POST",
      url: `${FEEDS}/create`,
      headers: admin,
      payload: Buffer.from("{}"),
    });
    expect(noType.statusCode).toBe(415);
  });

  it("updates partially: omitted and null scalars keep, description null removes, arrays and objects are replaced", async () => {
    const before = expectJson(await call("GET", `${FEEDS}/get/full`), 200) as Record<string, unknown>;
    const after = expectJson(
      await call("POST", `${FEEDS}/update/full`, {
        active: null,
        cacheConnectors: true,
        description: null,
        alternateNames: ["full-old"],
        packageFilters: {},
        variables: { Stage: "prod" },
        endpointUrl: "https://attacker.example/x",
        canPublish: true,
      }),
      200,
    ) as Record<string, unknown>;
    expectFeedShape(after);
    expect(after).not.toHaveProperty("description");
    expect(after).toMatchObject({
      active: false,
      cacheConnectors: true,
      alternateNames: ["full-old"],
      packageFilters: {},
      variables: { Stage: "prod" },
      variableDictionary: { Stage: "prod" },
      endpointUrl: "http://localhost:80/upack/full",
      canPublish: false,
    });
    expect(after.retentionRules).toEqual(before.retentionRules);
    expect(after.feedGroup).toEqual(before.feedGroup);
  });

  it("accepts a feed read with GET and posted back whole (as pgutil does), with PATCH too", async () => {
    const feed = expectJson(await call("GET", `${FEEDS}/get/full`), 200) as Record<string, unknown>;
    const updated = expectJson(
      await call("POST", `${FEEDS}/update/full`, { ...feed, description: "posted back" }),
      200,
    ) as Record<string, unknown>;
    expect(updated).toEqual({ ...feed, description: "posted back" });
    const patched = expectJson(
      await call("PATCH", `${FEEDS}/update/full`, { ...updated, description: "patched" }),
      200,
    ) as Record<string, unknown>;
    expect(patched).toEqual({ ...updated, description: "patched" });
    // pgutil's retention commands add a rule this way (issue 17): stored, its other members defaulted.
    const rule = { deletePrereleaseVersions: true, keepVersionsCount: 2 };
    const withRule = expectJson(
      await call("POST", `${FEEDS}/update/full`, { ...patched, retentionRules: [rule] }),
      200,
    ) as Record<string, unknown>;
    expect(withRule.retentionRules).toMatchObject([{ ...rule, deleteCached: false, deleteLatestStable: false }]);
  });

  it("takes whichever of variables / variableDictionary was edited, and refuses two different edits", async () => {
    const feed = expectJson(await call("GET", `${FEEDS}/get/full`), 200) as Record<string, unknown>;
    const edited = expectJson(
      await call("POST", `${FEEDS}/update/full`, { ...feed, variables: { Stage: "test" } }),
      200,
    ) as Record<string, unknown>;
    expect(edited.variableDictionary).toEqual({ Stage: "test" });
    const viaPgutil = expectJson(
      await call("POST", `${FEEDS}/update/full`, { ...edited, variableDictionary: { Stage: "qa" } }),
      200,
    ) as Record<string, unknown>;
    expect(viaPgutil.variables).toEqual({ Stage: "qa" });
    expectText(
      await call("POST", `${FEEDS}/update/full`, { variables: { a: "1" }, variableDictionary: { b: "2" } }),
      400,
      "variables and variableDictionary",
    );
  });

  it("changes the type only within universal/romp, never to a type Wharf does not serve", async () => {
    expect(
      (expectJson(await call("POST", `${FEEDS}/update/main`, { feedType: "ROMP" }), 200) as { feedType: string })
        .feedType,
    ).toBe("romp");
    expect(
      (expectJson(await call("POST", `${FEEDS}/update/main`, { feedType: "ProGet" }), 200) as { feedType: string })
        .feedType,
    ).toBe("universal");
    expectText(
      await call("POST", `${FEEDS}/update/main`, { feedType: "asset" }),
      400,
      "cannot be changed from universal to asset",
    );
    expectText(await call("POST", `${FEEDS}/update/main`, { feedType: "nuget" }), 400, "'nuget' is not served");
    expectText(
      await call("POST", `${FEEDS}/update/main`, { feedType: "nonsense" }),
      400,
      "a valid feed type is required",
    );
    expectText(await call("POST", `${FEEDS}/update/main`, { packagesPath: "/srv/x" }), 400, "WHARF_DATA_DIR");
    expectText(await call("POST", `${FEEDS}/update/main`, { connectors: ["c"] }), 422, "connector 'c' does not exist");
    expectJson(
      await call("POST", `${FEEDS}/update/main`, { packagesPath: null, dropPath: null, packageStore: null }),
      200,
    );
  });

  it("renames a feed when the new name is free; the old name is gone unless kept as an alternate", async () => {
    const renamed = expectJson(
      await call("POST", `${FEEDS}/update/main`, { name: "Primary", alternateNames: ["main"] }),
      200,
    );
    expect(renamed).toMatchObject({
      name: "Primary",
      alternateNames: ["main"],
      endpointUrl: "http://localhost:80/upack/Primary",
    });
    expect((expectJson(await call("GET", `${FEEDS}/get/main`), 200) as { name: string }).name).toBe("Primary");
    // Swapping back: the new primary name leaves the alternate list.
    const back = expectJson(await call("POST", `${FEEDS}/update/primary`, { name: "main" }), 200);
    expect(back).toMatchObject({ name: "main", alternateNames: [] });
    expectText(await call("GET", `${FEEDS}/get/Primary`), 404);
    expect(
      (expectJson(await call("POST", `${FEEDS}/update/main`, { name: "Main" }), 200) as { name: string }).name,
    ).toBe("Main");
  });

  it("deletes with DELETE or POST (200, empty body); the feed is then gone, and a recreated one gets new storage", async () => {
    const storageKey = async (name: string) =>
      (await readOne<{ storage_key: string }>(t.database, "SELECT storage_key FROM feeds WHERE name = ?", name))
        ?.storage_key;
    const before = await storageKey("legacy");
    expect(before).toBeDefined();
    const res = await call("DELETE", `${FEEDS}/delete/LEGACY`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe("");
    expectText(await call("GET", `${FEEDS}/get/legacy`), 404);
    expectText(await call("DELETE", `${FEEDS}/delete/legacy`), 404);
    expect((await call("POST", `${FEEDS}/delete/full-old`)).statusCode).toBe(200);
    expectText(await call("GET", `${FEEDS}/get/full`), 404);
    expect(await readOne(t.database, "SELECT count(*) AS n FROM feed_names WHERE name_key LIKE 'full%'")).toEqual({
      n: 0,
    });
    expectJson(await call("POST", `${FEEDS}/create`, { name: "legacy", feedType: "universal" }), 201);
    expect(await storageKey("legacy")).not.toBe(before);
  });

  it("documents every feed management route in /openapi.json", async () => {
    const doc = (await t.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, object>;
    };
    for (const path of ["create", "get/{name}", "list", "update/{name}", "delete/{name}"]) {
      expect(doc.paths, path).toHaveProperty([`${FEEDS}/${path}`]);
    }
    expect(Object.keys(doc.paths[`${FEEDS}/update/{name}`] ?? {})).toEqual(expect.arrayContaining(["post", "patch"]));
  });
});

function s3Xml(): string {
  return `<Inedo.ProGet.Extensions.AWS.PackageStores.S3FileSystem Assembly="AWS">
  <Properties AccessKey="a" SecretAccessKey="b" BucketName="c" RegionEndpoint="us-east-1" />
</Inedo.ProGet.Extensions.AWS.PackageStores.S3FileSystem>`;
}

function diskXml(path: string): string {
  return `<DiskPackageStore Assembly="Wharf"><Properties StoragePath="${path}" /></DiskPackageStore>`;
}

function entityXml(): string {
  return `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>
<DiskPackageStore Assembly="x"><Properties StoragePath="&b;" /></DiskPackageStore>`;
}

describe("feed management: who may do what", () => {
  let t: TestApp;
  const keys: Record<string, string> = {};
  const FORBIDDEN = PERMISSION_DENIED_MESSAGE;

  beforeAll(async () => {
    t = await buildTestApp();
    const admin = { "x-apikey": t.adminKey };
    for (const [name, feedGroup] of [
      ["alpha", "team"],
      ["beta", undefined],
    ] as const) {
      const res = await t.app.inject({
        method: "POST",
        url: `${FEEDS}/create`,
        headers: admin,
        payload: { name, feedType: "universal", feedGroup },
      });
      expect(res.statusCode).toBe(201);
    }
    keys.feedsSystem = await createSystemKey(t.database, ["feeds"]);
    keys.releasesSystem = await createSystemKey(t.database, ["releases"]);
    keys.expired = await createSystemKey(t.database, ["full-control"], { expiresAt: daysFromNow(-1) });
    keys.alphaView = await createFeedKey(t.database, "alpha", ["view"]);
    keys.alphaAdd = await createFeedKey(t.database, "alpha", ["view", "add", "promote", "delete"]);
    keys.betaView = await createFeedKey(t.database, "beta", ["view"]);
    keys.teamView = await createFeedKey(t.database, { group: "team" }, ["view"]);
    keys.unknown = newKey("unknown");
  });
  afterAll(async () => t.close());

  const as = (key: string | undefined, method: Method, url: string, payload?: object) =>
    t.app.inject({
      method,
      url,
      headers: key === undefined ? {} : { "x-apikey": key },
      ...(payload ? { payload } : {}),
    });
  const names = (res: LightMyRequestResponse) => (expectJson(res, 200) as { name: string }[]).map((f) => f.name);
  const createBody = (name: string) => ({ name, feedType: "universal" });

  it("anonymous: 401 with a Basic challenge on every protected endpoint; list answers 200 with nothing", async () => {
    for (const [method, url, payload] of [
      ["POST", `${FEEDS}/create`, createBody("anon")],
      ["GET", `${FEEDS}/get/alpha`],
      ["POST", `${FEEDS}/update/alpha`, { description: "x" }],
      ["DELETE", `${FEEDS}/delete/alpha`],
      ["GET", `${FEEDS}/get/no-such-feed`],
    ] as [Method, string, object?][]) {
      const res = await as(undefined, method, url, payload);
      expectText(res, 401);
      expect(res.headers["www-authenticate"], `${method} ${url}`).toBe('Basic realm="Wharf"');
    }
    expect(names(await as(undefined, "GET", `${FEEDS}/list`))).toEqual([]);
  });

  it("unknown and expired keys: 403 with the standard sentence everywhere, list included", async () => {
    for (const key of [keys.unknown, keys.expired]) {
      for (const [method, url, payload] of [
        ["POST", `${FEEDS}/create`, createBody("nope")],
        ["GET", `${FEEDS}/get/alpha`],
        ["GET", `${FEEDS}/list`],
        ["PATCH", `${FEEDS}/update/alpha`, { description: "x" }],
        ["POST", `${FEEDS}/delete/alpha`],
      ] as [Method, string, object?][]) {
        expect(expectText(await as(key, method, url, payload), 403)).toBe(FORBIDDEN);
      }
    }
  });

  it("a view-only feed key reads and lists its own feed and cannot create, change or delete feeds", async () => {
    const feed = expectJson(await as(keys.alphaView, "GET", `${FEEDS}/get/alpha`), 200) as { canPublish: boolean };
    expect(feed.canPublish).toBe(false);
    expect(names(await as(keys.alphaView, "GET", `${FEEDS}/list`))).toEqual(["alpha"]);
    expectText(await as(keys.alphaView, "POST", `${FEEDS}/create`, createBody("mine")), 403, FORBIDDEN);
    expectText(await as(keys.alphaView, "POST", `${FEEDS}/update/alpha`, { description: "x" }), 403, FORBIDDEN);
    expectText(await as(keys.alphaView, "DELETE", `${FEEDS}/delete/alpha`), 403, FORBIDDEN);
  });

  it("a feed key with every package permission still cannot manage feeds, but canPublish is true", async () => {
    expect(
      (expectJson(await as(keys.alphaAdd, "GET", `${FEEDS}/get/alpha`), 200) as { canPublish: boolean }).canPublish,
    ).toBe(true);
    expectText(await as(keys.alphaAdd, "POST", `${FEEDS}/create`, createBody("mine")), 403, FORBIDDEN);
    expectText(await as(keys.alphaAdd, "POST", `${FEEDS}/update/alpha`, { active: false }), 403, FORBIDDEN);
    expectText(await as(keys.alphaAdd, "POST", `${FEEDS}/delete/alpha`), 403, FORBIDDEN);
  });

  it("a feed key of another feed is refused (403), and its list shows only its own feed", async () => {
    expectText(await as(keys.betaView, "GET", `${FEEDS}/get/alpha`), 403, FORBIDDEN);
    expect(names(await as(keys.betaView, "GET", `${FEEDS}/list`))).toEqual(["beta"]);
  });

  it("a feed-group key sees the feeds of its group only", async () => {
    expectJson(await as(keys.teamView, "GET", `${FEEDS}/get/alpha`), 200);
    expectText(await as(keys.teamView, "GET", `${FEEDS}/get/beta`), 403);
    expect(names(await as(keys.teamView, "GET", `${FEEDS}/list`))).toEqual(["alpha"]);
  });

  it("a System key limited to releases is refused (403) and lists nothing; one limited to feeds may do everything", async () => {
    expectText(await as(keys.releasesSystem, "POST", `${FEEDS}/create`, createBody("rel")), 403, FORBIDDEN);
    expectText(await as(keys.releasesSystem, "GET", `${FEEDS}/get/alpha`), 403, FORBIDDEN);
    expectText(await as(keys.releasesSystem, "POST", `${FEEDS}/update/alpha`, { description: "x" }), 403, FORBIDDEN);
    expectText(await as(keys.releasesSystem, "DELETE", `${FEEDS}/delete/alpha`), 403, FORBIDDEN);
    expect(names(await as(keys.releasesSystem, "GET", `${FEEDS}/list`))).toEqual([]);

    expectJson(await as(keys.feedsSystem, "POST", `${FEEDS}/create`, createBody("gamma")), 201);
    expectJson(await as(keys.feedsSystem, "GET", `${FEEDS}/get/gamma`), 200);
    expectJson(await as(keys.feedsSystem, "POST", `${FEEDS}/update/gamma`, { description: "by feeds key" }), 200);
    expect(names(await as(keys.feedsSystem, "GET", `${FEEDS}/list`))).toEqual(["alpha", "beta", "gamma"]);
    expect((await as(keys.feedsSystem, "DELETE", `${FEEDS}/delete/gamma`)).statusCode).toBe(200);
  });

  it("accepts the key from every transport a client uses (docs/compat.md 0.1)", async () => {
    const key = keys.feedsSystem as string;
    const get = (options: InjectOptions) => t.app.inject({ method: "GET", url: `${FEEDS}/get/alpha`, ...options });
    expectJson(await get({ headers: { "x-apikey": key } }), 200);
    expectJson(await get({ headers: { "x-proget-apikey": key } }), 200);
    expectJson(await get({ url: `${FEEDS}/get/alpha?key=${key}` }), 200);
    expectJson(await get({ url: `${FEEDS}/get/alpha?API_Key=${key}` }), 200);
    expectJson(await get({ headers: basic("api", key) }), 200);
    expectJson(await get({ method: "POST", payload: { API_Key: key } }), 200);
    // The key in a JSON body authenticates a create and is never stored as data.
    const created = await t.app.inject({
      method: "POST",
      url: `${FEEDS}/create`,
      payload: { API_Key: key, ...createBody("delta") },
    });
    expect(JSON.stringify(expectJson(created, 201))).not.toContain(key);
    const updated = await t.app.inject({
      method: "POST",
      url: `${FEEDS}/update/delta`,
      payload: { API_Key: keys.alphaView, description: "x" },
    });
    expectText(updated, 403, FORBIDDEN);
    expect((await t.app.inject({ method: "DELETE", url: `${FEEDS}/delete/delta?key=${key}` })).statusCode).toBe(200);
  });

  it("users: grants decide (Basic, pseudo-key and personal key); a feed-scoped grant filters the list", async () => {
    const manager = await createUser(t.database, "manager", "manager-pw");
    await grant(t.database, { user: manager, attributes: ["Admin_ManageFeed", "Feeds_ViewFeed"] });
    const viewer = await createUser(t.database, "viewer", "viewer-pw");
    await grant(t.database, { user: viewer, attributes: ["Feeds_ViewFeed"], feed: "beta" });
    await createUser(t.database, "nobody", "nobody-pw");

    expectJson(
      await t.app.inject({
        method: "POST",
        url: `${FEEDS}/create`,
        headers: basic("manager", "manager-pw"),
        payload: createBody("epsilon"),
      }),
      201,
    );
    expectJson(
      await t.app.inject({ method: "GET", url: `${FEEDS}/get/epsilon`, headers: { "x-apikey": "manager:manager-pw" } }),
      200,
    );
    const personal = await createPersonalKey(t.database, manager);
    expect((await as(personal, "DELETE", `${FEEDS}/delete/epsilon`)).statusCode).toBe(200);

    const viewerList = await t.app.inject({
      method: "GET",
      url: `${FEEDS}/list`,
      headers: basic("viewer", "viewer-pw"),
    });
    expect(names(viewerList)).toEqual(["beta"]);
    expectText(
      await t.app.inject({ method: "GET", url: `${FEEDS}/get/alpha`, headers: basic("viewer", "viewer-pw") }),
      403,
    );
    expectText(
      await t.app.inject({
        method: "POST",
        url: `${FEEDS}/create`,
        headers: basic("nobody", "nobody-pw"),
        payload: createBody("z"),
      }),
      403,
    );
    expectText(
      await t.app.inject({ method: "GET", url: `${FEEDS}/get/beta`, headers: basic("viewer", "wrong") }),
      403,
      FORBIDDEN,
    );
  });

  it("renaming into a free name needs the right to manage feeds in general, not only this feed", async () => {
    const scoped = await createUser(t.database, "alpha-admin", "pw-alpha");
    await grant(t.database, { user: scoped, attributes: ["Admin_ManageFeed"], feed: "alpha" });
    const headers = basic("alpha-admin", "pw-alpha");
    expectJson(
      await t.app.inject({ method: "POST", url: `${FEEDS}/update/alpha`, headers, payload: { description: "mine" } }),
      200,
    );
    expectText(
      await t.app.inject({ method: "POST", url: `${FEEDS}/update/alpha`, headers, payload: { name: "beta-2" } }),
      403,
    );
    expectJson(await as(t.adminKey, "GET", `${FEEDS}/get/alpha`), 200);
  });

  it("anonymous access follows grants: a view grant on one feed shows it, and nothing else", async () => {
    await grant(t.database, { anonymous: true, attributes: ["Feeds_ViewFeed"], feed: "alpha" });
    expect(names(await as(undefined, "GET", `${FEEDS}/list`))).toEqual(["alpha"]);
    expectJson(await as(undefined, "GET", `${FEEDS}/get/alpha`), 200);
    expectText(await as(undefined, "GET", `${FEEDS}/get/beta`), 401);
  });
});
