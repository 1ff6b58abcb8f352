import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFeedService, type FeedService } from "../../src/areas/management/index.js";
import { apiKeysCommand } from "../../src/cli/api-keys.js";
import { feedsCommand } from "../../src/cli/feeds.js";
import { systemClock } from "../../src/domain/clock.js";
import { FEED_TYPES, SERVED_FEED_TYPES } from "../../src/domain/feeds.js";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { insertLegacyFeed } from "../helpers/legacy-feed.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { expectJson, expectText } from "../helpers/responses.js";

/**
 * Honest about what Wharf does (issue 12 section 1): feed types it does not serve cannot be
 * created or reached by a type change, and settings nothing acts on are refused unless they say
 * what Wharf does (off, mostly), through the management API, the API-key API and the CLI. The
 * native API has no method that creates a feed or a key. Feeds and keys an older Wharf stored
 * keep working: they list, read, round-trip and delete.
 */

const FEEDS = "/api/management/feeds";
const UNSERVED = FEED_TYPES.filter((type) => !(SERVED_FEED_TYPES as readonly string[]).includes(type));
const SERVED_LIST = ["universal", "romp", "asset"];

function expectRefused(res: LightMyRequestResponse, code: string, ...contains: string[]): void {
  expectText(res, 400, ...contains);
  expect(res.headers["x-wharf-error"]).toBe(code);
}

/** What an older Wharf stored and echoed back as if it worked. */
const LEGACY_SETTINGS = {
  symbolServerEnabled: true,
  useApiV3: true,
  vulnerabilitiesEnabled: true,
  licensesEnabled: true,
  retentionRulesEnabled: true,
  retentionRules: [
    {
      deletePrereleaseVersions: true,
      keepVersionsCount: 3,
      deletePackageIds: [],
      keepPackageIds: [],
      keepVersions: [],
      deleteVersions: [],
      deleteCached: false,
      sizeExclusive: false,
      keepIfActivelyConsumed: false,
    },
  ],
  allowedLicenses: ["MIT"],
  allowUnknownLicenses: false,
  packageFilters: { approved: "A.*" },
};

describe("feed types Wharf does not serve", () => {
  let t: TestApp;
  let admin: Record<string, string>;
  const call = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) =>
    t.app.inject({ method, url, headers: admin, ...(payload === undefined ? {} : { payload }) });

  beforeAll(async () => {
    t = await buildTestApp();
    admin = { "x-apikey": t.adminKey };
  });
  afterAll(async () => t.close());

  it("knows the 24 names of docs/compat.md 5.2 and serves 3 of them", () => {
    expect(FEED_TYPES).toHaveLength(24);
    expect([...SERVED_FEED_TYPES]).toEqual(SERVED_LIST);
    expect(UNSERVED).toHaveLength(21);
  });

  it.each(UNSERVED)(
    "refuses creating a %s feed with a 400 listing the served types; nothing is created",
    async (type) => {
      for (const spelling of [type, type.toUpperCase()]) {
        const res = await call("POST", `${FEEDS}/create`, { name: `f-${type}`, feedType: spelling });
        expectRefused(res, "FEED_TYPE_NOT_SERVED", `feed type '${type}' is not served by Wharf`, ...SERVED_LIST);
      }
      expectText(await call("GET", `${FEEDS}/get/f-${type}`), 404);
    },
  );

  it("creates every served type (any case, ProGet = universal), and each endpointUrl answers", async () => {
    const cases = [
      ["u1", "universal", "/packages"],
      ["u2", "Universal", "/packages"],
      ["u3", "ProGet", "/packages"],
      ["r1", "ROMP", "/packages"],
      ["a1", "asset", "/dir/"],
    ] as const;
    for (const [name, feedType, below] of cases) {
      const feed = expectJson(await call("POST", `${FEEDS}/create`, { name, feedType }), 201) as {
        endpointUrl: string;
      };
      const served = await call("GET", `${new URL(feed.endpointUrl).pathname}${below}`);
      expect(served.statusCode, `${feedType}: ${served.body}`).toBe(200);
      expect(served.json()).toEqual([]);
    }
  });

  it("refuses changing a feed to a type it does not serve, and leaves the type as it was", async () => {
    for (const [name, feedType] of [
      ["u1", "nuget"],
      ["u1", "Chocolatey"],
      ["r1", "npm"],
      ["a1", "docker"],
    ] as const) {
      const before = expectJson(await call("GET", `${FEEDS}/get/${name}`)) as { feedType: string };
      expectRefused(
        await call("POST", `${FEEDS}/update/${name}`, { feedType }),
        "FEED_TYPE_NOT_SERVED",
        "is not served by Wharf",
        ...SERVED_LIST,
      );
      expect(expectJson(await call("GET", `${FEEDS}/get/${name}`))).toMatchObject({ feedType: before.feedType });
    }
    // Within the served types, the family rule still holds.
    expectRefused(
      await call("POST", `${FEEDS}/update/u1`, { feedType: "asset" }),
      "FEED_TYPE_CHANGE",
      "cannot be changed from universal to asset",
    );
  });

  it("lists, reads, round-trips and deletes a nuget feed an older Wharf created, but never changes it to chocolatey", async () => {
    await insertLegacyFeed(t, "old-nuget", "nuget", LEGACY_SETTINGS);
    const listed = expectJson(await call("GET", `${FEEDS}/list`)) as { name: string; feedType: string }[];
    expect(listed.find((feed) => feed.name === "old-nuget")).toMatchObject({ feedType: "nuget" });
    const feed = expectJson(await call("GET", `${FEEDS}/get/OLD-NUGET`)) as Record<string, unknown>;
    expect(feed).toMatchObject({ feedType: "nuget", symbolServerEnabled: true, retentionRulesEnabled: true });

    // pgutil reads it, edits the description and posts the whole object back, type included.
    const edited = expectJson(await call("POST", `${FEEDS}/update/old-nuget`, { ...feed, description: "kept" }));
    expect(edited).toEqual({ ...feed, description: "kept" });
    expectJson(await call("PATCH", `${FEEDS}/update/old-nuget`, { feedType: "NuGet", active: false }));

    expectRefused(
      await call("POST", `${FEEDS}/update/old-nuget`, { feedType: "chocolatey" }),
      "FEED_TYPE_NOT_SERVED",
      "'chocolatey' is not served",
    );
    expectRefused(
      await call("POST", `${FEEDS}/update/old-nuget`, { feedType: "universal" }),
      "FEED_TYPE_CHANGE",
      "cannot be changed from nuget to universal",
    );
    // Not served: the universal feed API does not know it.
    expectText(await call("GET", "/upack/old-nuget/packages"), 404);

    expect((await call("DELETE", `${FEEDS}/delete/old-nuget`)).statusCode).toBe(200);
    expectText(await call("GET", `${FEEDS}/get/old-nuget`), 404);
  });

  it("describes the served types in /openapi.json", async () => {
    const doc = (await t.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
    };
    const body = doc.paths[`${FEEDS}/create`]?.post?.requestBody?.content["application/json"]?.schema as {
      properties: Record<string, { description?: string }>;
    };
    expect(body.properties.feedType?.description).toContain("universal, romp or asset");
    expect(body.properties.packageFilters?.description).toContain("Not implemented yet");
    expect(body.properties.vulnerabilitiesEnabled?.description).toContain("Not implemented yet: only false");
  });
});

/** Each setting Wharf does not act on, a value that would turn it on, and the value that says what Wharf does. */
const NOT_IMPLEMENTED: [string, unknown, unknown][] = [
  ["symbolServerEnabled", true, false],
  ["stripSymbols", true, false],
  ["stripSource", true, false],
  ["stripSignature", true, false],
  ["useApiV3", true, false],
  ["packageStatisticsEnabled", true, false],
  ["restrictPackageStatistics", true, false],
  ["usageRecordsEnabled", true, false],
  ["vulnerabilitiesEnabled", true, false],
  ["licensesEnabled", true, false],
  ["useWithProjects", true, false],
  ["deploymentRecordsEnabled", false, true],
  ["allowedLicenses", ["MIT"], []],
  ["blockedLicenses", ["GPL-3.0"], []],
  ["allowUnknownLicenses", false, true],
  ["packageFilters", { approved: "Microsoft.*, !Rubbish.*" }, {}],
  ["packageAccessRules", { internal: "Corp.*" }, {}],
];
const OFF = Object.fromEntries(NOT_IMPLEMENTED.map(([field, , off]) => [field, off]));

describe("feed settings Wharf does not act on", () => {
  let t: TestApp;
  let admin: Record<string, string>;
  const call = (method: "GET" | "POST" | "PATCH", url: string, payload?: object) =>
    t.app.inject({ method, url, headers: admin, ...(payload === undefined ? {} : { payload }) });

  beforeAll(async () => {
    t = await buildTestApp();
    admin = { "x-apikey": t.adminKey };
    expectJson(await call("POST", `${FEEDS}/create`, { name: "plain", feedType: "universal" }), 201);
  });
  afterAll(async () => t.close());

  it.each(NOT_IMPLEMENTED)(
    "refuses %s: %j on create and on update with a 400 naming it, and stores nothing",
    async (field, on) => {
      expectRefused(
        await call("POST", `${FEEDS}/create`, { name: "turned-on", feedType: "universal", [field]: on }),
        "SETTING_NOT_IMPLEMENTED",
        `${field}: `,
        "is not implemented yet",
      );
      expectText(await call("GET", `${FEEDS}/get/turned-on`), 404);
      const before = expectJson(await call("GET", `${FEEDS}/get/plain`));
      for (const method of ["POST", "PATCH"] as const) {
        expectRefused(
          await call(method, `${FEEDS}/update/plain`, { [field]: on }),
          "SETTING_NOT_IMPLEMENTED",
          `${field}: `,
        );
      }
      expect(expectJson(await call("GET", `${FEEDS}/get/plain`))).toEqual(before);
    },
  );

  it("a new feed shows each of them as what Wharf does", async () => {
    const { allowUnknownLicenses: _allow, ...shown } = OFF;
    const feed = expectJson(await call("GET", `${FEEDS}/get/plain`));
    expect(feed).toMatchObject(shown);
    // Absent means inherit: Wharf serves every package whatever its license.
    expect(feed).not.toHaveProperty("allowUnknownLicenses");
  });

  it("accepts every value that says what Wharf does, on create and on update, and null where null keeps or inherits", async () => {
    const created = expectJson(
      await call("POST", `${FEEDS}/create`, { name: "all-off", feedType: "universal", ...OFF }),
      201,
    );
    expect(created).toMatchObject(OFF);
    expect(expectJson(await call("POST", `${FEEDS}/update/plain`, OFF))).toMatchObject(OFF);
    const nulls = Object.fromEntries(NOT_IMPLEMENTED.map(([field]) => [field, null]));
    const afterNulls = expectJson(await call("POST", `${FEEDS}/update/all-off`, nulls));
    const { allowUnknownLicenses: _allow, ...kept } = OFF;
    expect(afterNulls).toMatchObject(kept);
    expect(afterNulls).not.toHaveProperty("allowUnknownLicenses");
    expectJson(await call("POST", `${FEEDS}/update/all-off`, { vulnerabilitySources: [] }));
  });

  it("accepts a feed read with GET and sent back whole, as pgutil does", async () => {
    const feed = expectJson(await call("GET", `${FEEDS}/get/plain`)) as Record<string, unknown>;
    expect(expectJson(await call("POST", `${FEEDS}/update/plain`, feed))).toEqual(feed);
    expect(expectJson(await call("PATCH", `${FEEDS}/update/plain`, { ...feed, description: "d" }))).toEqual({
      ...feed,
      description: "d",
    });
  });

  it("keeps what an older Wharf stored when it is sent back, refuses changing it to another 'on' value, accepts turning it off", async () => {
    await insertLegacyFeed(t, "old-universal", "universal", LEGACY_SETTINGS);
    const feed = expectJson(await call("GET", `${FEEDS}/get/old-universal`)) as Record<string, unknown>;
    expect(feed).toMatchObject(LEGACY_SETTINGS);
    expect(expectJson(await call("POST", `${FEEDS}/update/old-universal`, feed))).toEqual(feed);

    // Retention exists since issue 17: another rule is stored like any other setting.
    const otherRule = { keepVersionsCount: 10 };
    const changed = expectJson(
      await call("POST", `${FEEDS}/update/old-universal`, { retentionRules: [otherRule] }),
    ) as Record<string, unknown>;
    expect(changed.retentionRules).toMatchObject([otherRule]);
    expectRefused(
      await call("POST", `${FEEDS}/update/old-universal`, { allowedLicenses: ["MIT", "BSD-3-Clause"] }),
      "SETTING_NOT_IMPLEMENTED",
      "allowedLicenses: license filtering",
    );
    const off = expectJson(await call("POST", `${FEEDS}/update/old-universal`, { ...feed, ...OFF }));
    expect(off).toMatchObject(OFF);
    // Once off, turning it on again is refused like on any feed.
    expectRefused(
      await call("POST", `${FEEDS}/update/old-universal`, { symbolServerEnabled: true }),
      "SETTING_NOT_IMPLEMENTED",
    );
  });

  it("refuses asset-directory settings on universal feeds and connectors on asset directories (SETTING_NOT_APPLICABLE)", async () => {
    for (const [field, value] of [
      ["staticSite", true],
      ["cacheHeader", { type: "NoCache" }],
      ["cacheHeader", { type: "TTL", value: 60 }],
    ] as const) {
      expectRefused(
        await call("POST", `${FEEDS}/create`, { name: "u-site", feedType: "universal", [field]: value }),
        "SETTING_NOT_APPLICABLE",
        `${field}: applies to asset directories only`,
      );
      expectRefused(
        await call("POST", `${FEEDS}/update/plain`, { [field]: value }),
        "SETTING_NOT_APPLICABLE",
        `${field}: applies to asset directories only`,
      );
    }
    expectJson(
      await call("POST", `${FEEDS}/update/plain`, { staticSite: false, cacheHeader: { type: "Inherit" } }),
      200,
    );
    expectJson(await call("POST", `${FEEDS}/update/plain`, { cacheHeader: null }), 200);

    const site = expectJson(
      await call("POST", `${FEEDS}/create`, {
        name: "site",
        feedType: "asset",
        staticSite: true,
        cacheHeader: { type: "TTL", value: 60 },
      }),
      201,
    );
    expect(site).toMatchObject({ staticSite: true, cacheHeader: { type: "TTL", value: 60 } });
    // Refused for the type before the connector is looked up (none named 'up' exists).
    expectRefused(
      await call("POST", `${FEEDS}/update/site`, { connectors: ["up"] }),
      "SETTING_NOT_APPLICABLE",
      "connectors: applies to universal feeds only",
    );
    expectJson(await call("POST", `${FEEDS}/update/site`, { connectors: [] }), 200);
  });

  it("refuses deactivating an asset directory, which would still take uploads; a universal feed deactivates", async () => {
    expectRefused(
      await call("POST", `${FEEDS}/create`, { name: "off-site", feedType: "asset", active: false }),
      "SETTING_NOT_IMPLEMENTED",
      "active: deactivating an asset directory is not implemented yet",
    );
    expectRefused(await call("POST", `${FEEDS}/update/site`, { active: false }), "SETTING_NOT_IMPLEMENTED", "active:");
    expectJson(await call("POST", `${FEEDS}/update/site`, { active: true }), 200);
    expect(expectJson(await call("POST", `${FEEDS}/update/plain`, { active: false }))).toMatchObject({
      active: false,
      canPublish: false,
    });
  });
});

describe("API key logging, which Wharf does not do", () => {
  let t: TestApp;
  const create = (payload: object) =>
    t.app.inject({ method: "POST", url: "/api/api-keys/create", headers: { "x-apikey": t.adminKey }, payload });
  const list = async () =>
    expectJson(
      await t.app.inject({ method: "GET", url: "/api/api-keys/list", headers: { "x-apikey": t.adminKey } }),
    ) as { id: number; logging: string }[];

  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => t.close());

  it.each(["Request", "Response", "Both", "both"])(
    "refuses logging %s with a 400 naming it, and creates no key",
    async (logging) => {
      const before = (await list()).length;
      expectRefused(
        await create({ type: "System", systemApis: ["feeds"], logging }),
        "SETTING_NOT_IMPLEMENTED",
        "logging: ",
        "is not implemented yet",
      );
      expect((await list()).length).toBe(before);
    },
  );

  it("accepts None in any case, null and absent (pgutil sends ApiKeyInfo with logging None)", async () => {
    for (const logging of ["None", "none", null, undefined]) {
      const key = expectJson(await create({ type: "System", systemApis: ["feeds"], logging }), 201);
      expect(key).toMatchObject({ logging: "None" });
    }
  });

  it("lists and deletes a key an older Wharf stored with logging on", async () => {
    const { id } = expectJson(await create({ type: "System", systemApis: ["feeds"] }), 201) as { id: number };
    await writeFromOutside(t, "UPDATE api_keys SET logging = 'Both' WHERE id = ?", id);
    expect((await list()).find((key) => key.id === id)).toMatchObject({ logging: "Both" });
    const deleted = await t.app.inject({
      method: "DELETE",
      url: `/api/api-keys/delete?id=${id}`,
      headers: { "x-apikey": t.adminKey },
    });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect((await list()).some((key) => key.id === id)).toBe(false);
  });
});

// These commands work on the data directory's SQLite: in cluster mode they refuse to run
// (refuseInClusterMode), and the API above is what a cluster's operator uses.
describe.skipIf(testsRunOnPostgres())("the CLI (wharf feeds, wharf api-keys)", () => {
  let t: TestApp;
  let feeds: FeedService;
  let out: string[];
  let err: string[];
  const ctx = () => ({
    db: t.db,
    clock: systemClock,
    feeds,
    out: (line: string) => out.push(line),
    err: (line: string) => err.push(line),
  });
  async function wharf(command: "feeds" | "api-keys", ...args: string[]): Promise<number> {
    out = [];
    err = [];
    return command === "feeds" ? feedsCommand(args, ctx()) : apiKeysCommand(args, ctx());
  }

  beforeAll(async () => {
    t = await buildTestApp();
    feeds = createFeedService({ db: t.db, clock: systemClock, config: t.config });
  });
  afterAll(async () => t.close());

  it("lists only the served types in its help", async () => {
    expect(await wharf("feeds", "--help")).toBe(0);
    const help = out.join("\n");
    expect(help).toContain("Types: universal, romp, asset");
    expect(help).not.toMatch(/nuget|npm|docker|maven/i);
  });

  it("refuses creating a feed of a type Wharf does not serve (exit 1, the served types named)", async () => {
    for (const type of ["nuget", "NPM", "docker"]) {
      expect(await wharf("feeds", "create", "cli-feed", "--type", type)).toBe(1);
      expect(err.join("\n")).toMatch(/^error: feed type '\w+' is not served by Wharf; .*universal.*asset/);
    }
    expect(await wharf("feeds", "get", "cli-feed")).toBe(1);
    expect(await wharf("feeds", "create", "cli-feed", "--type", "Universal")).toBe(0);
    expect(await wharf("feeds", "update", "cli-feed", "--type", "maven")).toBe(1);
    expect(err.join("\n")).toContain("'maven' is not served");
    expect(await wharf("feeds", "update", "cli-feed", "--type", "romp")).toBe(0);
  });

  it("lists, updates and deletes a feed an older Wharf created with a type it does not serve", async () => {
    await insertLegacyFeed(t, "cli-old", "npm", LEGACY_SETTINGS);
    expect(await wharf("feeds", "list")).toBe(0);
    expect(out.join("\n")).toMatch(/cli-old\s+npm\s+true/);
    expect(await wharf("feeds", "update", "cli-old", "--description", "still here")).toBe(0);
    expect(JSON.parse(out.join("\n"))).toMatchObject({ feedType: "npm", description: "still here" });
    expect(await wharf("feeds", "update", "cli-old", "--type", "bower")).toBe(1);
    expect(err.join("\n")).toContain("'bower' is not served");
    expect(await wharf("feeds", "delete", "cli-old")).toBe(0);
  });

  it("refuses an API key with logging on (exit 1), accepts None, and says so in its help", async () => {
    expect(await wharf("api-keys", "create", "--type", "System", "--apis", "feeds", "--logging", "Both")).toBe(1);
    expect(err.join("\n")).toMatch(/^error: logging: .* is not implemented yet/);
    expect(await wharf("api-keys", "create", "--type", "System", "--apis", "feeds", "--logging", "None")).toBe(0);
    expect(await wharf("api-keys", "--help")).toBe(0);
    expect(out.join("\n")).toContain("--logging None (request logging is not implemented yet)");
    expect(out.join("\n")).not.toContain("Both");
  });
});
