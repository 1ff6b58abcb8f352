import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { startAzurite } from "../helpers/azurite.js";
import { azuriteStoreServer, type ObjectStoreServer } from "../helpers/object-store-feeds.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Promotion between feeds on different package stores (issue 17 section 2): the bytes cannot be
 * shared, so the target's store gets a copy, checked against the SHA-256, and the version reads
 * back byte for byte from there. The object store is a real Azure emulator (azurite) on loopback.
 */

let t: TestApp;
let store: ObjectStoreServer;
const admin = () => ({ "x-apikey": t.adminKey });
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

beforeAll(async () => {
  store = await azuriteStoreServer(startAzurite());
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  const fixtures = createUpackFixtures(t);
  for (const feed of ["dev", "cloud", "prod"]) await fixtures.createFeed(feed);
  const res = await t.app.inject({
    method: "POST",
    url: "/api/storage?feed=cloud",
    headers: admin(),
    payload: store.storage,
  });
  expect(res.statusCode, res.body).toBe(200);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await store?.stop();
});

const promote = (fromFeed: string, toFeed: string) =>
  t.app.inject({
    method: "POST",
    url: "/api/promotions/promote",
    headers: admin(),
    payload: { fromFeed, toFeed, group: "acme", name: "app", version: "1.0.0" },
  });
const download = (feed: string) =>
  t.app.inject({ method: "GET", url: `/upack/${feed}/download/acme/app/1.0.0`, headers: admin() });

describe("promotion across package stores", () => {
  it("copies the file into the target's object store, verified, and back to a disk feed", async () => {
    const original = await buildUpack({
      group: "acme",
      name: "app",
      version: "1.0.0",
      files: { "a.txt": "built once" },
    });
    expect(
      (await t.app.inject({ method: "PUT", url: "/upack/dev/upload", headers: admin(), payload: original })).statusCode,
    ).toBe(201);
    const before = await store.objectNames();
    expect(before.some((name) => name.endsWith(sha256(original)))).toBe(false);

    const toCloud = await promote("dev", "cloud");
    expect(toCloud.statusCode, toCloud.body).toBe(200);
    expect(toCloud.json()).toMatchObject({ fromFeed: "dev", toFeed: "cloud", sha256: sha256(original) });
    // In the object store itself, named by its SHA-256, not only in Wharf's rows.
    expect((await store.objectNames()).some((name) => name.endsWith(sha256(original)))).toBe(true);
    const fromCloud = await download("cloud");
    expect(fromCloud.statusCode).toBe(200);
    expect(sha256(fromCloud.rawPayload)).toBe(sha256(original));

    const toProd = await promote("cloud", "prod");
    expect(toProd.statusCode, toProd.body).toBe(200);
    const fromProd = await download("prod");
    expect(sha256(fromProd.rawPayload)).toBe(sha256(original));
    const list = await t.app.inject({ url: "/api/promotions/list?name=app", headers: admin() });
    expect((list.json() as { fromFeed: string; toFeed: string }[]).map((p) => `${p.fromFeed}>${p.toFeed}`)).toEqual([
      "cloud>prod",
      "dev>cloud",
    ]);
  });
});
