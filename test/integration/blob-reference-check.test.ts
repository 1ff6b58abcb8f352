import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blobReferenceCheck } from "../../src/storage/blob-keeper.js";
import { postgresBlobReferenceCheck } from "../../src/storage/blob-keeper-postgres.js";
import { byDatabase } from "../../src/storage/metadata-db.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * The batch reference check that garbage collection marks with (blob-keeper.ts blobReferenceCheck):
 * it must agree with the single check on rows of every table the `blob_references` view lists, on
 * both databases (on PostgreSQL the cluster's collection on the leader marks with it).
 */

let t: TestApp;
const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  await createUpackFixtures(t).createFeed("packages");
  await createAssetDirectory(t, "site");
});
afterAll(async () => t.close());

describe("blobReferenceCheck", () => {
  it("names, in one call, exactly the addresses no package or asset row references, each once", async () => {
    const upack = await buildUpack({ name: "referenced", version: "1.0.0" });
    const res = await t.app.inject({
      method: "PUT",
      url: "/upack/packages/upload",
      headers: { "x-apikey": t.adminKey },
      payload: upack,
    });
    expect(res.statusCode, res.body).toBe(201);
    // Two asset files with the same bytes: one blob, two rows.
    expect((await putAsset(t, "site", "a.txt", "asset bytes")).statusCode).toBe(201);
    expect((await putAsset(t, "site", "b.txt", "asset bytes")).statusCode).toBe(201);

    const check = byDatabase(t.database, blobReferenceCheck, postgresBlobReferenceCheck);
    const garbage = [sha256("never stored"), sha256("gone")];
    const referenced = [sha256(upack), sha256("asset bytes")];
    const asked = [referenced[0], garbage[0], referenced[1], garbage[1], garbage[0]] as string[];

    const unreferenced = await check.unreferencedAmong?.(asked);
    expect(unreferenced?.sort()).toEqual([...garbage].sort());
    expect(await check.unreferencedAmong?.([])).toEqual([]);
    for (const address of referenced) expect(await check(address)).toBe(true);
    for (const address of garbage) expect(await check(address)).toBe(false);
  });
});
