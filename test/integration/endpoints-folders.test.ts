import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("asset directory folders (docs/compat.md 4.3)", () => {
  let t: TestApp;
  const admin = () => ({ "x-apikey": t.adminKey });
  const list = async (url: string) => {
    const res = await t.app.inject({ method: "GET", url, headers: admin() });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    return res.json() as Array<Record<string, unknown>>;
  };
  const post = (url: string) => t.app.inject({ method: "POST", url, headers: { ...admin(), "content-length": "0" } });

  beforeAll(async () => {
    t = await buildTestApp();
    await createAssetDirectory(t, "tree");
    await putAsset(t, "tree", "readme.txt", "root file");
    await putAsset(t, "tree", "docs/a.txt", "a");
    await putAsset(t, "tree", "docs/deep/b.txt", "b");
  });
  afterAll(async () => t.close());

  it("lists a folder's direct items, folders with type dir and no size, content or hashes", async () => {
    const root = await list("/endpoints/tree/dir/");
    expect(root.map((item) => item.name)).toEqual(["docs", "readme.txt"]);
    const [folder, file] = root as [Record<string, unknown>, Record<string, unknown>];
    expect(folder).toEqual({
      name: "docs",
      type: "dir",
      created: expect.stringMatching(ISO),
      modified: expect.stringMatching(ISO),
      userMetadata: {},
      cacheHeader: { type: "Inherit" },
    });
    expect(file).toMatchObject({ name: "readme.txt", type: "text/plain; charset=utf-8", size: 9 });
    expect(file).not.toHaveProperty("parent");
    expect(JSON.stringify(root)).not.toContain("null");
    expect(await list("/endpoints/tree/dir")).toEqual(root);
  });

  it("lists every item below a folder with recursive, as clients spell it", async () => {
    const recursive = await list("/endpoints/tree/dir/docs?recursive=true");
    expect(recursive.map((item) => [item.parent, item.name])).toEqual([
      ["docs", "a.txt"],
      ["docs", "deep"],
      ["docs/deep", "b.txt"],
    ]);
    expect(await list("/endpoints/tree/dir/docs?recursive=True")).toEqual(recursive);
    // pgutil appends a stray ')' to the value (docs/clients.md 3.4).
    expect((await list("/endpoints/tree/dir/docs?recursive=false)")).map((item) => item.name)).toEqual([
      "a.txt",
      "deep",
    ]);
    expect((await list("/endpoints/tree/dir/?recursive=true")).length).toBe(5);
  });

  it("lists a missing folder as an empty array", async () => {
    expect(await list("/endpoints/tree/dir/no/such/folder")).toEqual([]);
  });

  it("creates folders with their parents, and an existing folder is no error", async () => {
    expect((await post("/endpoints/tree/dir/new/inner")).statusCode).toBe(201);
    expect((await post("/endpoints/tree/dir/new/inner")).statusCode).toBe(201);
    expect((await list("/endpoints/tree/dir/new")).map((item) => [item.name, item.type])).toEqual([["inner", "dir"]]);
    const onFile = await post("/endpoints/tree/dir/readme.txt");
    expect(onFile.statusCode).toBe(400);
  });

  it("deletes files and folders; a folder with contents needs recursive", async () => {
    await putAsset(t, "tree", "trash/x/y.txt", "y");
    const refused = await post("/endpoints/tree/delete/trash");
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain("not empty");
    expect((await list("/endpoints/tree/dir/trash?recursive=true")).length).toBe(2);
    expect((await post("/endpoints/tree/delete/trash/x/y.txt")).statusCode).toBe(200);
    expect((await post("/endpoints/tree/delete/trash?recursive=True")).statusCode).toBe(200);
    expect(await list("/endpoints/tree/dir/trash")).toEqual([]);
    expect((await list("/endpoints/tree/dir/")).map((item) => item.name)).not.toContain("trash");
    expect((await post("/endpoints/tree/delete/trash")).statusCode).toBe(200); // missing: not an error
    expect((await post("/endpoints/tree/delete/")).statusCode).toBe(400);
  });

  it("deletes a whole subtree, leaving folders with similar names alone", async () => {
    await putAsset(t, "tree", "sub/a.txt", "a");
    await putAsset(t, "tree", "sub-2/b.txt", "b");
    await putAsset(t, "tree", "sub0/c.txt", "c");
    expect((await post("/endpoints/tree/delete/sub?recursive=true")).statusCode).toBe(200);
    const names = (await list("/endpoints/tree/dir/")).map((item) => item.name);
    expect(names).toContain("sub-2");
    expect(names).toContain("sub0");
    expect(names).not.toContain("sub");
  });
});

describe("asset metadata (docs/compat.md 4.4)", () => {
  let t: TestApp;
  const admin = () => ({ "x-apikey": t.adminKey });
  const getMeta = (path: string) =>
    t.app.inject({ method: "GET", url: `/endpoints/meta/metadata/${path}`, headers: admin() });
  const setMeta = (path: string, payload: unknown) =>
    t.app.inject({
      method: "POST",
      url: `/endpoints/meta/metadata/${path}`,
      headers: admin(),
      payload: payload as object,
    });
  const download = (path: string) =>
    t.app.inject({ method: "GET", url: `/endpoints/meta/content/${path}`, headers: admin() });

  beforeAll(async () => {
    t = await buildTestApp();
    await createAssetDirectory(t, "meta");
    await putAsset(t, "meta", "files/report.csv", "a,b");
  });
  afterAll(async () => t.close());

  it("reads an item's metadata, and 404s for a missing one", async () => {
    const res = await getMeta("files/report.csv");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: "report.csv", parent: "files", userMetadata: {}, size: 3 });
    const missing = await getMeta("files/none.csv");
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toBe("The specified asset was not found.");
    expect((await getMeta("files")).json()).toMatchObject({ name: "files", type: "dir" });
  });

  it("updates user metadata, merging or replacing, and sends marked entries as headers", async () => {
    const first = await setMeta("files/report.csv", {
      userMetadata: { owner: "team-a", "X-Build": { value: "42", includeInResponseHeader: true } },
      userMetadataUpdateMode: "update",
    });
    expect(first.statusCode).toBe(200);
    expect(first.json().userMetadata).toEqual({
      owner: "team-a",
      "X-Build": { value: "42", includeInResponseHeader: true },
    });
    const merged = await setMeta("files/report.csv", { userMetadata: { stage: "qa" } });
    expect(Object.keys(merged.json().userMetadata).sort()).toEqual(["X-Build", "owner", "stage"]);
    const res = await download("files/report.csv");
    expect(res.headers["x-build"]).toBe("42");
    expect(res.headers.owner).toBeUndefined();

    const replaced = await setMeta("files/report.csv", {
      userMetadata: { stage: "prod" },
      userMetadataUpdateMode: "replace",
    });
    expect(replaced.json().userMetadata).toEqual({ stage: "prod" });
    expect((await download("files/report.csv")).headers["x-build"]).toBeUndefined();
  });

  it("changes a file's type, and ignores a type given for a folder", async () => {
    const file = await setMeta("files/report.csv", { type: "text/csv" });
    expect(file.json().type).toBe("text/csv");
    expect((await download("files/report.csv")).headers["content-type"]).toBe("text/csv");
    const folder = await setMeta("files", { type: "text/plain" });
    expect(folder.statusCode).toBe(200);
    expect(folder.json().type).toBe("dir");
  });

  it("inherits cache settings from folders and the directory, typed as pgutil types them", async () => {
    await putAsset(t, "meta", "cached/deep/file.txt", "c");
    expect((await download("cached/deep/file.txt")).headers["cache-control"]).toBe("public");
    const ttl = await setMeta("cached", { cacheHeader: { type: "ttl", value: "60" } });
    expect(ttl.json().cacheHeader).toEqual({ type: "TTL", value: 60 });
    expect((await download("cached/deep/file.txt")).headers["cache-control"]).toBe("public, max-age=60");
    await setMeta("cached/deep", { cacheHeader: { type: "NOCACHE" } });
    expect((await download("cached/deep/file.txt")).headers["cache-control"]).toBe("no-cache");
    await setMeta("cached/deep/file.txt", { cacheHeader: { type: "custom", value: "private, max-age=5" } });
    expect((await download("cached/deep/file.txt")).headers["cache-control"]).toBe("private, max-age=5");
    await setMeta("cached/deep/file.txt", { cacheHeader: { type: "Inherit" } });
    await setMeta("cached/deep", { cacheHeader: { type: "inherit" } });
    await setMeta("cached", { cacheHeader: { type: "Inherit" } });
    const update = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/update/meta",
      headers: admin(),
      payload: { cacheHeader: { type: "TTL", value: 3600 } },
    });
    expect(update.statusCode).toBe(200);
    expect(update.json().cacheHeader).toEqual({ type: "TTL", value: 3600 });
    expect((await download("cached/deep/file.txt")).headers["cache-control"]).toBe("public, max-age=3600");
  });

  it("refuses bad metadata with a message naming the problem", async () => {
    const cases: Array<[unknown, string]> = [
      [{ cacheHeader: { type: "forever" } }, "cacheHeader.type"],
      [{ cacheHeader: { type: "TTL", value: "soon" } }, "TTL"],
      [{ cacheHeader: { type: "Custom", value: "a\r\nSet-Cookie: x=1" } }, "Custom"],
      [{ userMetadataUpdateMode: "merge" }, "userMetadataUpdateMode"],
      [{ userMetadata: ["a"] }, "userMetadata"],
      [{ userMetadata: { "Set-Cookie": { value: "x=1", includeInResponseHeader: true } } }, "Set-Cookie"],
      [{ userMetadata: { "Content-Security-Policy": { value: "", includeInResponseHeader: true } } }, "Wharf sets it"],
      [{ userMetadata: { "bad name": { value: "x", includeInResponseHeader: true } } }, "not a header name"],
      [{ userMetadata: { note: { value: "a\nb", includeInResponseHeader: true } } }, "printable ASCII"],
      [{ type: "not a type" }, "media type"],
    ];
    for (const [payload, phrase] of cases) {
      const res = await setMeta("files/report.csv", payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.body).toContain(phrase);
    }
    const text = await t.app.inject({
      method: "POST",
      url: "/endpoints/meta/metadata/files/report.csv",
      headers: { ...admin(), "content-type": "text/plain" },
      payload: "type=text/csv",
    });
    expect(text.statusCode).toBe(415);
    expect((await setMeta("files/missing.csv", { userMetadata: { a: "b" } })).statusCode).toBe(404);
  });

  it("closes the connection of an update refused before its body was read, rather than read it all", async () => {
    const url = "/endpoints/meta/metadata/files/report.csv";
    const body = Buffer.alloc(2 * 1024 * 1024);
    const binary = { "content-type": "application/octet-stream" };
    const raw = await t.app.inject({ method: "POST", url, headers: { ...admin(), ...binary }, payload: body });
    expect(raw.statusCode).toBe(415);
    expect(raw.headers.connection).toBe("close");
    const anonymous = await t.app.inject({ method: "POST", url, headers: binary, payload: body });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers.connection).toBe("close");
  });
});
