import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory } from "../helpers/asset-fixtures.js";
import { basic, createFeedKey } from "../helpers/fixtures.js";

/**
 * Replays of the asset-directory requests that real clients send (docs/clients.md 3.4 pgutil, 3.5
 * Inedo.AssetDirectories, 3.9 ProGetAutomation, 3.15 Cake.ProGet, 3.16 proget-updater, 3.18 the
 * ccdc Ansible role), with the answers each of them needs.
 */
let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await buildTestApp();
  await createAssetDirectory(t, "assets");
  key = await createFeedKey(t.database, "assets", ["view", "add", "delete"]);
});
afterAll(async () => t.close());

describe("pgutil assets", () => {
  it("uploads without a Content-Type, lists with its stray ')' and reads metadata", async () => {
    const upload = await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/content/pgutil/tool.tar.gz",
      headers: { "x-apikey": key },
      payload: Buffer.from("tarball"),
    });
    expect(upload.statusCode).toBe(201);
    const list = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/dir/pgutil?recursive=false)",
      headers: { "x-apikey": key, accept: "application/json" },
    });
    expect(list.statusCode).toBe(200);
    const [item] = list.json() as Array<Record<string, unknown>>;
    expect(item).toMatchObject({ name: "tool.tar.gz", parent: "pgutil", type: "application/gzip", size: 7 });
    for (const field of ["created", "modified", "md5", "sha1", "sha256", "sha512"]) {
      expect(typeof item?.[field], field).toBe("string");
    }
    const meta = await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/metadata/pgutil/tool.tar.gz",
      headers: { "x-apikey": key, "content-type": "application/json" },
      payload: {
        userMetadataUpdateMode: "update",
        userMetadata: { channel: "stable", "X-Tool": { value: "1", includeInResponseHeader: true } },
        cacheHeader: { type: "ttl", value: "60" },
      },
    });
    expect(meta.statusCode).toBe(200);
    expect(meta.json().cacheHeader).toEqual({ type: "TTL", value: 60 });
    const ranged = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/content/pgutil/tool.tar.gz",
      headers: { "x-apikey": key, range: "bytes=3-6" },
    });
    // Random access reads exactly b-a bytes without checking the status: a 206 with them.
    expect(ranged.statusCode).toBe(206);
    expect(ranged.body).toBe("ball");
    expect(ranged.headers["x-tool"]).toBe("1");
  });

  it("creates a folder with an empty POST and deletes with delete/<path>", async () => {
    const folder = await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/dir/pgutil/empty",
      headers: { "x-apikey": key },
    });
    expect(folder.statusCode).toBe(201);
    const del = await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/delete/pgutil/empty?recursive=false",
      headers: { "x-apikey": key },
    });
    expect(del.statusCode).toBe(200);
  });
});

describe("Inedo.AssetDirectories", () => {
  const headers = () => ({ "x-apikey": key, "x-proget-apikey": key });

  it("lists with gzip accepted and capitalised booleans, and gets JSON back", async () => {
    await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/content/lib/a.txt",
      headers: { ...headers(), "transfer-encoding": "chunked" },
      payload: "chunked upload",
    });
    const res = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/dir/lib?recursive=True",
      headers: { ...headers(), accept: "application/json", "accept-encoding": "gzip, deflate, br" },
    });
    expect(res.statusCode).toBe(200);
    expect(String(res.headers["content-type"]).startsWith("application/json")).toBe(true);
    expect((res.json() as Array<{ name: string; created: string }>)[0]?.created).toMatch(/^\d{4}-/);
  });

  it("creates folders and deletes with capitalised recursive and Content-Length 0", async () => {
    const create = await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/dir/lib/sub",
      headers: { ...headers(), "content-length": "0" },
    });
    expect(create.statusCode).toBe(201);
    const del = await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/delete/lib?recursive=True",
      headers: { ...headers(), "content-length": "0" },
    });
    expect(del.statusCode).toBe(200);
    const gone = await t.app.inject({ method: "GET", url: "/endpoints/assets/metadata/lib", headers: headers() });
    expect(gone.statusCode).toBe(404);
    // Error bodies are read only when the type is exactly text/plain.
    expect(gone.headers["content-type"]).toBe("text/plain");
  });
});

describe("ProGetAutomation", () => {
  it("uploads a string as text/plain; charset=utf-8 and reads it back", async () => {
    const put = await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/content/pga/notes.txt",
      headers: { "x-apikey": key, "content-type": "text/plain; charset=utf-8" },
      payload: "Grüße",
    });
    expect(put.statusCode).toBe(201);
    const get = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/content/pga/notes.txt",
      headers: { "x-apikey": key },
    });
    expect(get.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(get.body).toBe("Grüße");
  });

  it("sends an empty POST with the type before a file upload", async () => {
    const first = await t.app.inject({
      method: "POST",
      url: "/endpoints/assets/content/pga/app.zip",
      headers: { "x-apikey": key, "content-type": "application/zip", "content-length": "0" },
    });
    expect(first.statusCode).toBe(201);
    expect(first.json()).toMatchObject({ size: 0, type: "application/zip" });
  });

  it("finds a missing asset reported with the phrase its tests look for", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/content/pga/none.txt",
      headers: { "x-apikey": key },
    });
    expect(res.statusCode).toBe(404);
    expect(res.body).toContain("The specified asset was not found");
    const listMissing = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/dir/pga/none",
      headers: { "x-apikey": key },
    });
    expect(listMissing.json()).toEqual([]);
  });

  it("deletes with DELETE content/<path>", async () => {
    const res = await t.app.inject({
      method: "DELETE",
      url: "/endpoints/assets/content/pga/notes.txt",
      headers: { "x-apikey": key },
    });
    expect(res.statusCode).toBe(200);
  });
});

describe("Cake.ProGet (Basic auth only)", () => {
  const auth = () => basic("api", key);

  it("checks existence with HEAD, uploads with PUT, reads 400 as 'would overwrite'", async () => {
    const missing = await t.app.inject({
      method: "HEAD",
      url: "/endpoints/assets/content/cake/a.nupkg",
      headers: auth(),
    });
    expect(missing.statusCode).toBe(404);
    const put = await t.app.inject({
      method: "PUT",
      url: "/endpoints/assets/content/cake/a.nupkg",
      headers: auth(),
      payload: "pkg",
    });
    expect(put.statusCode).toBe(201);
    const exists = await t.app.inject({
      method: "HEAD",
      url: "/endpoints/assets/content/cake/a.nupkg",
      headers: auth(),
    });
    expect(exists.statusCode).toBe(200);
    const again = await t.app.inject({
      method: "PUT",
      url: "/endpoints/assets/content/cake/a.nupkg",
      headers: auth(),
      payload: "pkg",
    });
    expect(again.statusCode).toBe(400);
  });

  it("addresses folders under content/: POST creates, GET with recursive lists, DELETE on a folder is 400", async () => {
    const create = await t.app.inject({ method: "POST", url: "/endpoints/assets/content/cake/dir/", headers: auth() });
    expect(create.statusCode).toBe(201);
    const list = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/content/cake/?recursive=true",
      headers: auth(),
    });
    expect(list.statusCode).toBe(200);
    expect((list.json() as Array<{ name: string }>).map((item) => item.name).sort()).toEqual(["a.nupkg", "dir"]);
    const deleteFolder = await t.app.inject({
      method: "DELETE",
      url: "/endpoints/assets/content/cake/dir",
      headers: auth(),
    });
    expect(deleteFolder.statusCode).toBe(400);
    const deleteFile = await t.app.inject({
      method: "DELETE",
      url: "/endpoints/assets/content/cake/a.nupkg",
      headers: auth(),
    });
    expect(deleteFile.statusCode).toBe(200);
  });

  it("gets 401 with a Basic challenge without credentials", async () => {
    const res = await t.app.inject({ method: "HEAD", url: "/endpoints/assets/content/cake/a.nupkg" });
    expect(res.statusCode).toBe(401);
    expect(res.headers["www-authenticate"]).toMatch(/^Basic/);
  });
});

describe("proget-updater and the ccdc Ansible role", () => {
  it("walks dir then dir/<sub>, and PUT answers 201", async () => {
    const put = await t.app.inject({
      method: "PUT",
      url: "/endpoints/assets/content/mirror.bin",
      headers: { "x-apikey": key },
      payload: "m",
    });
    expect(put.statusCode).toBe(201);
    const top = await t.app.inject({ method: "GET", url: "/endpoints/assets/dir", headers: { "x-apikey": key } });
    const folders = (top.json() as Array<{ name: string; type: string }>).filter((item) => item.type === "dir");
    for (const folder of folders) {
      const sub = await t.app.inject({
        method: "GET",
        url: `/endpoints/assets/dir/${folder.name}`,
        headers: { "x-apikey": key },
      });
      expect(sub.statusCode).toBe(200);
    }
    const file = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/content/mirror.bin",
      headers: { "x-apikey": key },
    });
    expect(file.body).toBe("m");
  });

  it("reads size and sha256 from metadata/<path>", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: "/endpoints/assets/metadata/mirror.bin",
      headers: { "x-apikey": key },
    });
    expect(res.json()).toMatchObject({ size: 1, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });
});
