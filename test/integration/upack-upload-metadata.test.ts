import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { filePart, formBody } from "../helpers/form-data.js";
import { buildUpack, buildZip, createUpackFixtures, readZip, sha1Hex } from "../helpers/upack-fixtures.js";

/**
 * The seed's upload table (docs/seed-api.md A "Upload package"), every row for every body form:
 * the package file as a raw body (application/zip on upload, application/octet-stream on the feed URL
 * itself, no Content-Type at all), a multipart/form-data form of the file, and JSON or urlencoded
 * metadata carrying the file as content-b64. "If it is already a package file, additional metadata may
 * be given in the query string": it is stored, read back through the feed API and the package's own
 * upack.json.
 */
let t: TestApp;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}`;

beforeAll(async () => {
  t = await buildTestApp();
  await createUpackFixtures(t).createFeed("meta");
});
afterAll(async () => t.close());

const BODY_FORMS = [
  "zip",
  "octet-stream on the feed URL",
  "no Content-Type",
  "multipart",
  "json",
  "urlencoded",
] as const;
type BodyForm = (typeof BODY_FORMS)[number];
const RAW: readonly BodyForm[] = ["zip", "octet-stream on the feed URL", "no Content-Type"];

interface UploadRequest {
  readonly bytes: Buffer;
  /** The query string's parameters. */
  readonly query?: Record<string, string>;
  /** What follows `upload` (`/<group>/<name>/<version>`); not for the feed URL. */
  readonly path?: string;
  /** Parameters in the body: form fields, JSON properties or urlencoded pairs (not for raw bodies). */
  readonly fields?: Record<string, string | string[]>;
}

function upload(form: BodyForm, request: UploadRequest): Promise<LightMyRequestResponse> {
  const { bytes, path = "", fields = {} } = request;
  const query = new URLSearchParams(request.query ?? {}).toString();
  const url = (base: string) => `${base}${query === "" ? "" : `?${query}`}`;
  const admin = { "x-apikey": t.adminKey };
  switch (form) {
    case "zip":
      return t.app.inject({
        method: "PUT",
        url: url(`/upack/meta/upload${path}`),
        headers: { ...admin, "content-type": "application/zip" },
        payload: bytes,
      });
    case "octet-stream on the feed URL":
      return t.app.inject({
        method: "PUT",
        url: url(path === "" ? "/upack/meta" : `/upack/meta/upload${path}`),
        headers: { ...admin, "content-type": "application/octet-stream" },
        payload: bytes,
      });
    case "no Content-Type":
      return t.app.inject({ method: "POST", url: url(`/upack/meta/upload${path}`), headers: admin, payload: bytes });
    case "multipart": {
      const text = Object.entries(fields).flatMap(([name, value]) =>
        (Array.isArray(value) ? value : [value]).map((content) => ({ name, content })),
      );
      const body = formBody([filePart("package.upack", bytes), ...text]);
      return t.app.inject({
        method: "POST",
        url: url(`/upack/meta/upload${path}`),
        headers: { ...admin, "content-type": body.contentType },
        payload: body.payload,
      });
    }
    case "json":
      return t.app.inject({
        method: "POST",
        url: url(`/upack/meta/upload${path}`),
        headers: { ...admin, "content-type": "application/json" },
        payload: JSON.stringify({ ...fields, "content-b64": bytes.toString("base64") }),
      });
    case "urlencoded": {
      const pairs = new URLSearchParams();
      for (const [name, value] of Object.entries(fields)) {
        for (const item of Array.isArray(value) ? value : [value]) pairs.append(name, item);
      }
      pairs.append("content-b64", bytes.toString("base64"));
      return t.app.inject({
        method: "POST",
        url: url(`/upack/meta/upload${path}`),
        headers: { ...admin, "content-type": "application/x-www-form-urlencoded" },
        payload: pairs.toString(),
      });
    }
  }
}

const get = (url: string) => t.app.inject({ method: "GET", url, headers: { "x-apikey": t.adminKey } });

/** The version as the feed API lists it, and the upack.json inside the stored package. */
async function stored(group: string, name: string, version: string) {
  const listed = await get(`/upack/meta/versions?group=${group}&name=${name}&version=${version}`);
  expect(listed.statusCode, listed.body).toBe(200);
  const tail = `${group === "" ? "" : `${group}/`}${name}/${version}`;
  const file = await get(`/upack/meta/download/${tail}`);
  expect(file.statusCode).toBe(200);
  const entries = await readZip(file.rawPayload);
  return {
    listed: listed.json<Record<string, unknown>>(),
    manifest: JSON.parse(entries.get("upack.json") ?? "null") as Record<string, unknown>,
    entries,
    sha1: sha1Hex(file.rawPayload),
  };
}

function expect201(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(201);
}
function expect400(res: LightMyRequestResponse, pattern: RegExp): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.headers["content-type"]).toMatch(/^text\/plain/);
  expect(res.body).toMatch(pattern);
}

describe.each(BODY_FORMS)("upload table, body form: %s", (form) => {
  it("already a package: additional metadata in the query string is stored (title, any other, lists)", async () => {
    const name = unique("extra");
    const bytes = await buildUpack({ group: "acme", name, version: "1.0.0", manifest: { description: "from file" } });
    const res = await upload(form, {
      bytes,
      query: {
        title: "From the query",
        Icon: "package://icon.png",
        _build: "42",
        tags: "ci,nightly",
        dependencies: "acme:lib:1.0.0,other",
        description: "from file",
      },
    });
    expect201(res);
    const { listed, manifest, entries } = await stored("acme", name, "1.0.0");
    const expected = {
      group: "acme",
      name,
      version: "1.0.0",
      description: "from file",
      title: "From the query",
      icon: "package://icon.png",
      _build: "42",
      tags: ["ci", "nightly"],
      dependencies: ["acme:lib:1.0.0", "other"],
    };
    expect(manifest).toEqual(expected);
    expect(listed).toMatchObject(expected);
    // The package's content is the uploaded one.
    expect(entries.get(`package/readme.txt`)).toBe(`${name} 1.0.0`);
  });

  it("already a package, nothing added: stored byte for byte, also when the query repeats upack.json", async () => {
    const name = unique("same");
    const bytes = await buildUpack({ name, version: "2.0.0", manifest: { title: "T", tags: ["a", "b"] } });
    expect201(await upload(form, { bytes, query: { name, version: "2.0.0", title: "T", tags: "a,b" } }));
    expect((await stored("", name, "2.0.0")).sha1).toBe(sha1Hex(bytes));
  });

  it("already a package: a query value that differs from upack.json is 400 and nothing is stored", async () => {
    const name = unique("differs");
    const bytes = await buildUpack({ name, version: "1.0.0", manifest: { title: "In the file" } });
    expect400(
      await upload(form, { bytes, query: { title: "In the query" } }),
      /^('package\.upack': )?The parameter 'title' was given as 'In the query' but the package's upack\.json has '"In the file"'/,
    );
    expect400(
      await upload(form, { bytes, query: { version: "1.0.1" } }),
      /^('package\.upack': )?The request names the package/,
    );
    expect400(
      await upload(form, { bytes, query: { group: "elsewhere" } }),
      /^('package\.upack': )?The request names the package/,
    );
    expect((await get(`/upack/meta/versions?name=${name}`)).json()).toEqual([]);
  });

  it("group, name and version: in the path or the query, the same twice is fine, different twice is 400", async () => {
    const name = unique("path");
    const bytes = await buildUpack({ group: "g/h", name, version: "3.0.0" });
    if (form !== "octet-stream on the feed URL") {
      expect201(await upload(form, { bytes, path: `/g/h/${name}/3.0.0`, query: { version: "3.0.0", _x: "1" } }));
      expect((await stored("g/h", name, "3.0.0")).manifest).toMatchObject({ _x: "1" });
    }
    expect400(
      await upload(form, { bytes, path: `/g/h/${name}/3.0.0`, query: { version: "3.0.1" } }),
      /^The parameter 'version' was given more than once with different values/,
    );
  });

  it("not a package (a plain ZIP): converted from the query's name, version, group and metadata", async () => {
    const name = unique("plain");
    const zip = await buildZip({ "bin/run.sh": "#!/bin/sh" });
    expect201(
      await upload(form, {
        bytes: zip,
        query: { group: "tools", name, version: "0.1.0", title: "Plain", dependencies: "tools:base:1.0.0" },
      }),
    );
    const { manifest, entries } = await stored("tools", name, "0.1.0");
    expect(manifest).toEqual({
      group: "tools",
      name,
      version: "0.1.0",
      title: "Plain",
      dependencies: ["tools:base:1.0.0"],
    });
    expect(entries.get("package/bin/run.sh")).toBe("#!/bin/sh");
    // Name and version are required then.
    expect400(await upload(form, { bytes: zip, query: { name } }), /give at least 'name' and 'version'/);
  });

  it("content-b64 and content-url: invalid with a package in the body, and never both", async () => {
    const bytes = await buildUpack({ name: unique("content"), version: "1.0.0" });
    if (RAW.includes(form) || form === "multipart") {
      for (const source of ["content-b64", "content-url"]) {
        const value = source === "content-b64" ? bytes.toString("base64") : "https://example.com/p.zip";
        expect400(
          await upload(form, { bytes, query: { [source]: value } }),
          new RegExp(`^'${source}' cannot be combined with a package in the request body\\.$`),
        );
      }
    } else {
      expect400(
        await upload(form, { bytes, fields: { "content-url": "https://example.com/p.zip" } }),
        /^Give either 'content-b64' or 'content-url', not both\.$/,
      );
    }
  });
});

describe("metadata in the body itself (forms and JSON), for a file that is already a package", () => {
  for (const form of ["multipart", "json", "urlencoded"] as const) {
    it(`${form}: the body's fields add metadata as the query's do, and must agree with the query`, async () => {
      const name = unique(`body-${form}`);
      const bytes = await buildUpack({ name, version: "1.0.0" });
      const tags = form === "json" ? (["x", "y"] as unknown as string) : "x,y";
      expect201(await upload(form, { bytes, query: { title: "Q" }, fields: { description: "B", tags, _from: form } }));
      expect((await stored("", name, "1.0.0")).manifest).toEqual({
        name,
        version: "1.0.0",
        title: "Q",
        description: "B",
        tags: ["x", "y"],
        _from: form,
      });
      expect400(
        await upload(form, { bytes, query: { title: "Q" }, fields: { title: "Other" } }),
        /^The parameter 'title' was given more than once with different values/,
      );
    });
  }

  it("JSON: dependencies as an array; a query string's comma-separated list must say the same", async () => {
    const name = unique("deps");
    const bytes = await buildUpack({ name, version: "1.0.0" });
    const res = await t.app.inject({
      method: "POST",
      url: "/upack/meta/upload?dependencies=a:b:1.0.0,c",
      headers: { "x-apikey": t.adminKey, "content-type": "application/json" },
      payload: JSON.stringify({ dependencies: ["a:b:1.0.0", "c"], "content-b64": bytes.toString("base64") }),
    });
    expect201(res);
    expect((await stored("", name, "1.0.0")).manifest).toMatchObject({ dependencies: ["a:b:1.0.0", "c"] });
  });

  it("a .vpack body takes additional query metadata too", async () => {
    const name = unique("virtual");
    const vpack = Buffer.from(JSON.stringify({ name, version: "1.0.0", contents: ["acme:lib:1.0.0"] }), "utf8");
    const res = await upload("octet-stream on the feed URL", { bytes: vpack, query: { title: "Virtual" } });
    expect201(res);
    const listed = (await get(`/upack/meta/versions?name=${name}&version=1.0.0`)).json<Record<string, unknown>>();
    expect(listed).toMatchObject({ name, title: "Virtual", isVirtual: true });
  });
});
