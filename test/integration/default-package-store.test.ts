import { createHash, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";

/**
 * The server-wide default package store (WHARF_PACKAGE_STORE, issue 15 section 1) on a real
 * Azure emulator: feeds that set no store write there, what was written before stays readable,
 * and a store once used stays readable after the default changes back.
 */
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("the server-wide default package store", () => {
  let azurite: AzuriteServer;
  let dataDir: string;
  const container = `wharf-default-${randomUUID()}`;

  beforeAll(async () => {
    azurite = await startAzurite();
    dataDir = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-default-store-")), "data");
  }, 30_000);

  afterAll(async () => {
    await azurite?.stop();
    if (dataDir) await fs.rm(path.dirname(dataDir), { recursive: true, force: true });
  });

  /** An app on the shared data directory; closing it keeps the directory (TestApp.close would remove it). */
  async function start(env: Record<string, string>): Promise<TestApp & { stop(): Promise<void> }> {
    const t = await buildTestApp({ dataDir, env });
    return {
      ...t,
      stop: async () => {
        await t.app.close();
        t.db.close();
      },
    };
  }

  const get = (t: TestApp, url: string) => t.app.inject({ method: "GET", url, headers: { "x-apikey": t.adminKey } });
  const diskHas = (text: string) => {
    const address = sha256(text);
    return existsSync(path.join(dataDir, "blobs", address.slice(0, 2), address.slice(2, 4), address));
  };
  const azureEnv = () => ({
    WHARF_PACKAGE_STORE: "azure",
    WHARF_AZURE_CONNECTION_STRING: azurite.connectionString(),
    WHARF_AZURE_CONTAINER_NAME: container,
    WHARF_AZURE_TARGET_PATH: "wharf",
  });

  it("sends new content of feeds without a store there, keeps older content readable, and remembers the store", async () => {
    // First on the data directory's disk store.
    let t = await start({});
    await createAssetDirectory(t, "site");
    expect((await putAsset(t, "site", "before.txt", "written on disk")).statusCode).toBe(201);
    expect(diskHas("written on disk")).toBe(true);
    await t.stop();

    // Then with an Azure default: new content goes to the container, the old stays readable.
    t = await start(azureEnv());
    expect((await putAsset(t, "site", "after.txt", "written to azure")).statusCode).toBe(201);
    expect(diskHas("written to azure")).toBe(false);
    const blobs = BlobServiceClient.fromConnectionString(azurite.connectionString()).getContainerClient(container);
    const names: string[] = [];
    for await (const blob of blobs.listBlobsFlat({ prefix: "wharf/blobs/" })) names.push(blob.name);
    expect(names).toEqual([`wharf/blobs/${sha256("written to azure")}`]);
    expect((await get(t, "/endpoints/site/content/before.txt")).body).toBe("written on disk");
    expect((await get(t, "/endpoints/site/content/after.txt")).body).toBe("written to azure");
    // The default is what a feed without a store shows, its connection string hidden.
    const storage = await get(t, "/api/storage?feed=site");
    expect(storage.json()).toMatchObject({
      id: "azure",
      properties: { ConnectionString: "********", ContainerName: container, TargetPath: "wharf" },
    });
    expect(storage.body).not.toContain("AccountKey");
    await t.stop();

    // New credentials in the environment replace the remembered ones (here a wrong key: refused).
    t = await start({ ...azureEnv(), WHARF_AZURE_CONNECTION_STRING: azurite.connectionString("d3Jvbmcga2V5") });
    const refused = await putAsset(t, "site", "refused.txt", "never stored");
    expect(refused.statusCode, refused.body).toBe(502);
    expect(refused.body).not.toContain("d3Jvbmcga2V5");
    await t.stop();
    // And the right ones again.
    t = await start(azureEnv());
    expect((await putAsset(t, "site", "again.txt", "written to azure again")).statusCode).toBe(201);
    await t.stop();

    // Back to the disk default: what went to Azure is still served (the store is remembered).
    t = await start({});
    expect((await get(t, "/endpoints/site/content/after.txt")).body).toBe("written to azure");
    expect((await get(t, "/endpoints/site/content/before.txt")).body).toBe("written on disk");
    // The remembered store's credentials are sealed at rest.
    const row = t.db.prepare<[], { config: string }>("SELECT config FROM blob_stores").get();
    expect(row?.config).toBeDefined();
    expect(row?.config).not.toContain("AccountKey");
    await t.stop();
  }, 60_000);

  it("/health says whether the package stores answer: OK, or Error without naming the store (the log does)", async () => {
    const good = await start(azureEnv());
    try {
      const res = await good.app.inject({ method: "GET", url: "/health" });
      expect(res.statusCode).toBe(200);
      expect(res.json().packageStores).toEqual({ status: "OK" });
    } finally {
      await good.stop();
    }
    const wrongKey = Buffer.alloc(64, 1).toString("base64");
    const refused = await start({ ...azureEnv(), WHARF_AZURE_CONNECTION_STRING: azurite.connectionString(wrongKey) });
    try {
      const res = await refused.app.inject({ method: "GET", url: "/health" });
      // The node still serves what it can: the store's state is reported, not a failed health check.
      expect(res.statusCode).toBe(200);
      const stores = res.json().packageStores as { status: string; detail: string };
      expect(stores.status).toBe("Error");
      // /health is public: no host, account or reason in the answer (the log has them).
      expect(stores.detail).toBe("A package store does not answer: the server's log says which, and why.");
      expect(JSON.stringify(res.json())).not.toContain(wrongKey);
      expect(JSON.stringify(res.json())).not.toContain(container);
    } finally {
      await refused.stop();
    }
  });

  it("refuses to start with a default store that lacks a required property, naming the variable", async () => {
    await expect(
      buildTestApp({ env: { WHARF_PACKAGE_STORE: "azure", WHARF_AZURE_CONTAINER_NAME: "c" } }),
    ).rejects.toThrow(/ConnectionString.*WHARF_AZURE_/);
  });
});
