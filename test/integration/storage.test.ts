import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createSystemKey, createUser, grant, newKey, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { expectJson, expectText } from "../helpers/responses.js";

const DEFAULT_DISK = { id: "disk", properties: { StoragePath: null } };

/**
 * What a feed with no storage setting of its own shows: the server default. On one machine that is
 * the data directory's disk; in cluster mode (PostgreSQL) the server-wide object store the test node
 * was given (postgres-test-app.ts: an Azurite container), its connection string hidden.
 */
function serverDefaultStorage(t: TestApp): unknown {
  if (!testsRunOnPostgres()) return DEFAULT_DISK;
  const container = t.config.defaultStorage?.properties.ContainerName;
  if (typeof container !== "string") throw new Error("a cluster node's test app names its Azurite container");
  return {
    id: "azure",
    properties: { ConnectionString: "********", ContainerName: container, TargetPath: "packages" },
  };
}

describe("feed storage (/api/storage, docs/compat.md 5.1 and 5.2)", () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let serverDefault: unknown;
  const get = (url: string, headers: Record<string, string> = admin) => t.app.inject({ method: "GET", url, headers });
  const post = (url: string, payload: unknown, headers: Record<string, string> = admin) =>
    t.app.inject({ method: "POST", url, headers, payload: payload as object });

  beforeAll(async () => {
    t = await buildTestApp();
    admin = { "x-apikey": t.adminKey };
    serverDefault = serverDefaultStorage(t);
    for (const name of ["store", "other"]) {
      const res = await post("/api/management/feeds/create", { name, feedType: "universal" });
      expect(res.statusCode).toBe(201);
    }
  });
  afterAll(async () => t.close());

  it("lists the storage types as FeedStorageType objects (pgutil: id required, properties described)", async () => {
    const types = expectJson(await get("/api/storage"), 200) as {
      id: string;
      name: string;
      description: string;
      properties: Record<string, { required: boolean; name: string; description: string; type: string }>;
    }[];
    expect(types.map((type) => type.id)).toEqual(["disk", "s3", "azure"]);
    for (const type of types) {
      expect(typeof type.name).toBe("string");
      for (const property of Object.values(type.properties)) {
        expect(typeof property.required).toBe("boolean");
        expect(typeof property.name).toBe("string");
        expect(typeof property.type).toBe("string");
      }
    }
    expect(types[0]?.properties).toHaveProperty("StoragePath");
    expect(types[1]?.properties.RegionEndpoint?.required).toBe(true);
    expect(types[2]?.properties.ConnectionString?.required).toBe(true);
    const head = await t.app.inject({ method: "HEAD", url: "/api/storage", headers: admin });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe("");
    expect((await get("/api/storage?indent")).body).toContain('\n  {\n    "id": "disk"');
  });

  it("gives a feed's storage: the server default (disk with no StoragePath on one machine), exactly as the docs show", async () => {
    expect(expectJson(await get("/api/storage?feed=store"), 200)).toEqual(serverDefault);
    const exactly = testsRunOnPostgres()
      ? JSON.stringify(serverDefault)
      : '{"id":"disk","properties":{"StoragePath":null}}';
    expect((await get("/api/storage?feed=store")).body).toBe(exactly);
    expect(expectJson(await get("/api/storage?Feed=STORE"), 200)).toEqual(serverDefault);
    expectText(await get("/api/storage?feed=missing"), 404, "was not found");
  });

  it("accepts disk storage with no path, in every spelling of empty: 200 + the server default", async () => {
    for (const body of [
      { id: "disk", properties: { StoragePath: null } },
      { id: "Disk", properties: {} },
      { id: "disk" },
      { id: "disk", properties: null },
      { id: "disk", properties: { storagepath: "" } },
    ]) {
      expect(expectJson(await post("/api/storage?feed=store", body), 200)).toEqual(serverDefault);
    }
  });

  it("refuses a disk path, explaining where Wharf keeps content", async () => {
    expectText(
      await post("/api/storage?feed=store", { id: "disk", properties: { StoragePath: "/srv/packages" } }),
      400,
      "content-addressed blobs under its data directory",
    );
    expect(expectJson(await get("/api/storage?feed=store"), 200)).toEqual(serverDefault);
  });

  it("validates s3 and azure settings, stores them with their secrets sealed and never returns a secret", async () => {
    expectText(
      await post("/api/storage?feed=store", { id: "s3", properties: { Bucket: "x" } }),
      400,
      "unknown property 'Bucket' for s3 storage",
    );
    expectText(
      await post("/api/storage?feed=store", { id: "azure", properties: { ConnectionString: "x", Container: "y" } }),
      400,
      "unknown property 'Container' for azure storage",
    );
    const s3 = { AccessKey: "a", SecretAccessKey: "top-secret-s3", RegionEndpoint: "us-east-1" };
    expectText(await post("/api/storage?feed=store", { id: "s3", properties: s3 }), 400, "'BucketName' is required");
    expectText(await post("/api/storage?feed=store", { id: "S3" }), 400, "'AccessKey' is required");
    expectText(
      await post("/api/storage?feed=store", {
        id: "s3",
        properties: { ...s3, BucketName: "b", UseInstanceProfile: true },
      }),
      400,
      "UseInstanceProfile are not supported",
    );
    expectText(
      await post("/api/storage?feed=store", {
        id: "s3",
        properties: { ...s3, BucketName: "b", CustomServiceUrl: "ftp://x" },
      }),
      400,
      "must be an http or https URL",
    );
    // The server never sends signed requests to a cloud metadata service or a link-local address.
    for (const url of ["http://169.254.169.254", "http://metadata.google.internal/", "http://[fe80::1]:9000"]) {
      expectText(
        await post("/api/storage?feed=store", {
          id: "s3",
          properties: { ...s3, BucketName: "b", CustomServiceUrl: url },
        }),
        400,
        "the store's endpoint",
      );
    }
    expectText(
      await post("/api/storage?feed=store", {
        id: "azure",
        properties: {
          ConnectionString: "AccountName=a;AccountKey=k;BlobEndpoint=http://169.254.169.254/a",
          ContainerName: "c",
        },
      }),
      400,
      "the store's endpoint is a cloud metadata address",
    );
    // A secret that was never stored cannot be "kept".
    expectText(
      await post("/api/storage?feed=store", {
        id: "azure",
        properties: { ConnectionString: "********", ContainerName: "y" },
      }),
      400,
      "send the secret itself",
    );

    const saved = expectJson(
      await post("/api/storage?feed=store", { id: "s3", properties: { ...s3, BucketName: "b" } }),
      200,
    ) as { properties: Record<string, unknown> };
    expect(saved.properties).toMatchObject({ AccessKey: "a", SecretAccessKey: "********", BucketName: "b" });
    const read = expectJson(await get("/api/storage?feed=store"), 200);
    expect(read).toEqual(saved);
    const feed = expectJson(await get("/api/management/feeds/get/store"), 200) as { packageStore: string };
    expect(feed.packageStore).toContain('SecretAccessKey="********"');
    // Sealed at rest: the database never holds the secret in plain text.
    const storedSecret = async () => {
      const row = await readOne<{ settings: string }>(t.database, "SELECT settings FROM feeds WHERE name = 'store'");
      expect(row?.settings).not.toContain("top-secret-s3");
      const settings = JSON.parse(row?.settings ?? "{}") as { storage: { properties: Record<string, unknown> } };
      return settings.storage.properties.SecretAccessKey;
    };
    const sealed = await storedSecret();
    expect(sealed).toEqual(expect.any(String));
    // Posting back what was read, with another property changed, keeps the stored secret.
    expectJson(
      await post("/api/storage?feed=store", { id: "s3", properties: { ...saved.properties, TargetPath: "p" } }),
      200,
    );
    expect(await storedSecret()).toBe(sealed);
    // Back to the default.
    expectJson(await post("/api/storage?feed=store", { id: "disk" }), 200);
  });

  it.each([
    ["no id", { properties: {} }, "storage type id is required"],
    ["unknown id", { id: "ftp", properties: {} }, "unknown storage type 'ftp'"],
    ["numeric id", { id: 7 }, "id"],
    ["unknown disk property", { id: "disk", properties: { Path: "/x" } }, "unknown property 'Path' for disk storage"],
    ["properties as array", { id: "disk", properties: ["x"] }, "properties"],
    ["number for a string", { id: "disk", properties: { StoragePath: 5 } }, "must be a string"],
    ["properties as array on s3", { id: "s3", properties: ["x"] }, "properties"],
  ])("refuses %s (400, plain text)", async (_case, body, message) => {
    expectText(await post("/api/storage?feed=store", body), 400, message);
  });

  it("refuses requests without a feed, for a missing feed, or with a body that is not JSON", async () => {
    expectText(await post("/api/storage", { id: "disk" }), 400, "feed query parameter is required");
    expectText(await post("/api/storage?feed=missing", { id: "disk" }), 404, "was not found");
    const text = await t.app.inject({
      method: "POST",
      url: "/api/storage?feed=store",
      headers: { ...admin, "content-type": "text/plain" },
      payload: "disk",
    });
    expectText(text, 415, "application/json");
    expectText(
      await t.app.inject({
        method: "POST",
        url: "/api/storage?feed=store",
        headers: { ...admin, "content-type": "application/json" },
        payload: "{",
      }),
      400,
    );
  });

  it("keeps packageStore on the Feed and /api/storage consistent (one setting)", async () => {
    const feeds = "/api/management/feeds";
    const diskXml = '<DiskPackageStore Assembly="Wharf"><Properties /></DiskPackageStore>';
    const updated = expectJson(await post(`${feeds}/update/store`, { packageStore: diskXml }), 200);
    expect(updated).not.toHaveProperty("packageStore"); // default disk storage is shown as no packageStore
    expect(expectJson(await get("/api/storage?feed=store"), 200)).toEqual(serverDefault);
    const azureXml =
      '<Inedo.ProGet.Extensions.Azure.PackageStores.AzureFileSystem Assembly="Azure"><Properties ConnectionString="c" ContainerName="k" />' +
      "</Inedo.ProGet.Extensions.Azure.PackageStores.AzureFileSystem>";
    const withAzure = expectJson(await post(`${feeds}/update/store`, { packageStore: azureXml }), 200) as {
      packageStore: string;
    };
    expect(withAzure.packageStore).toContain('ConnectionString="********"');
    expect(expectJson(await get("/api/storage?feed=store"), 200)).toMatchObject({
      id: "azure",
      properties: { ConnectionString: "********", ContainerName: "k" },
    });
    // The feed read back and posted again keeps the stored connection string.
    expectJson(await post(`${feeds}/update/store`, { packageStore: withAzure.packageStore }), 200);
    expect(expectJson(await post(`${feeds}/update/store`, { packageStore: null }), 200)).not.toHaveProperty(
      "packageStore",
    );
    expect(expectJson(await get("/api/storage?feed=store"), 200)).toEqual(serverDefault);
  });

  it("an object store needs the right to configure the server; a feed manager keeps what the feed has", async () => {
    const userId = await createUser(t.database, "felix", "a long enough password 1");
    await grant(t.database, { user: userId, attributes: ["Admin_ManageFeed", "Feeds_ViewFeed"], feed: "other" });
    const felix = basic("felix", "a long enough password 1");
    const azure = { ConnectionString: "UseDevelopmentStorage=true", ContainerName: "wharf-c" };
    const azureXml = `<AzurePackageStore><Properties ConnectionString="UseDevelopmentStorage=true" ContainerName="wharf-c" /></AzurePackageStore>`;
    const refused = await post("/api/management/feeds/update/other", { packageStore: azureXml }, felix);
    expectText(refused, 403, "Admin_ConfigureProGet");
    expect(refused.headers["x-wharf-error"]).toBe("STORE_FORBIDDEN");
    const viaStorage = await post("/api/storage?feed=other", { id: "azure", properties: azure }, felix);
    expectText(viaStorage, 403, "Admin_ConfigureProGet");
    expect(viaStorage.headers["x-wharf-error"]).toBe("STORE_FORBIDDEN");
    // Set by an administrator, the feed can be read and sent back whole by its manager.
    expectJson(await post("/api/storage?feed=other", { id: "azure", properties: azure }), 200);
    const feed = expectJson(await get("/api/management/feeds/get/other", felix), 200) as Record<string, unknown>;
    expectJson(await post("/api/management/feeds/update/other", { ...feed, description: "kept" }, felix), 200);
    // Pointing it somewhere else is the administrator's again.
    const elsewhere = feed.packageStore as string;
    expectText(
      await post(
        "/api/management/feeds/update/other",
        { packageStore: elsewhere.replace('ContainerName="wharf-c"', 'ContainerName="wharf-elsewhere"') },
        felix,
      ),
      403,
      "Admin_ConfigureProGet",
    );
    // ...and the same store posted again through /api/storage is the manager's too.
    expectJson(
      await post(
        "/api/storage?feed=other",
        { id: "azure", properties: { ...azure, ConnectionString: "********" } },
        felix,
      ),
      200,
    );
    expectJson(await post("/api/storage?feed=other", { id: "disk" }), 200);
  });

  it("access: listing types needs any identity, reading a feed's storage needs view, setting it needs manage", async () => {
    const anonymous = {};
    const viewKey = { "x-apikey": await createFeedKey(t.database, "store", ["view", "add", "promote", "delete"]) };
    const otherKey = { "x-apikey": await createFeedKey(t.database, "other", ["view"]) };
    const feedsKey = { "x-apikey": await createSystemKey(t.database, ["feeds"]) };
    const releasesKey = { "x-apikey": await createSystemKey(t.database, ["releases"]) };
    const unknown = { "x-apikey": newKey() };

    const challenge = await get("/api/storage", anonymous);
    expectText(challenge, 401);
    expect(challenge.headers["www-authenticate"]).toBe('Basic realm="Wharf"');
    expectText(await get("/api/storage?feed=store", anonymous), 401);
    expectText(await post("/api/storage?feed=store", { id: "disk" }, anonymous), 401);
    expect(expectText(await get("/api/storage", unknown), 403)).toBe(PERMISSION_DENIED_MESSAGE);

    for (const headers of [viewKey, otherKey, feedsKey, releasesKey])
      expectJson(await get("/api/storage", headers), 200);
    expectJson(await get("/api/storage?feed=store", viewKey), 200);
    expectText(await get("/api/storage?feed=store", otherKey), 403, PERMISSION_DENIED_MESSAGE);
    expectText(await get("/api/storage?feed=store", releasesKey), 403, PERMISSION_DENIED_MESSAGE);
    expectText(await post("/api/storage?feed=store", { id: "disk" }, viewKey), 403, PERMISSION_DENIED_MESSAGE);
    expectText(await post("/api/storage?feed=store", { id: "disk" }, releasesKey), 403, PERMISSION_DENIED_MESSAGE);
    expectJson(await post("/api/storage?feed=store", { id: "disk" }, feedsKey), 200);
    expectJson(
      await t.app.inject({
        method: "POST",
        url: "/api/storage?feed=store",
        payload: { API_Key: t.adminKey, id: "disk" },
      }),
      200,
    );

    // Anonymous with a global view grant may list the types (and read storage of feeds it may view).
    await grant(t.database, { anonymous: true, attributes: ["Feeds_ViewFeed"] });
    expectJson(await get("/api/storage", anonymous), 200);
    expectJson(await get("/api/storage?feed=store", anonymous), 200);
    expectText(await post("/api/storage?feed=store", { id: "disk" }, anonymous), 401);
  });

  it("access and bad input on /api/storage/move: view to read, manage to retry, names never paths", async () => {
    const viewKey = { "x-apikey": await createFeedKey(t.database, "store", ["view"]) };
    const otherKey = { "x-apikey": await createFeedKey(t.database, "other", ["view"]) };
    // (The test above granted Anonymous view: reading is open to it, retrying is not.)
    expectText(await get("/api/storage/move?feed=store", {}), 404, "never moved");
    expectText(await post("/api/storage/move?feed=store", {}, {}), 401);
    expectText(await get("/api/storage/move?feed=store", { "x-apikey": newKey() }), 403, PERMISSION_DENIED_MESSAGE);
    expectText(await get("/api/storage/move?feed=store", otherKey), 403, PERMISSION_DENIED_MESSAGE);
    expectText(await post("/api/storage/move?feed=store", {}, viewKey), 403, PERMISSION_DENIED_MESSAGE);
    expectText(await get("/api/storage/move?feed=store", viewKey), 404, "never moved");
    expectText(await get("/api/storage/move", admin), 400, "feed query parameter is required");
    for (const name of ["..%2f..%2fstore", "%2e%2e", "../store"]) {
      expectText(await get(`/api/storage/move?feed=${name}`, admin), 404, "was not found");
    }
    // A body is not read: a large one is refused before anything else happens.
    const large = await t.app.inject({
      method: "POST",
      url: "/api/storage/move?feed=store",
      headers: { ...admin, "content-type": "application/json" },
      payload: JSON.stringify({ filler: "x".repeat(2 * 1024 * 1024) }),
    });
    expect(large.statusCode).toBe(413);
  });

  it("is documented in /openapi.json", async () => {
    const doc = (await get("/openapi.json")).json() as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths["/api/storage"] ?? {})).toEqual(expect.arrayContaining(["get", "post"]));
  });
});
