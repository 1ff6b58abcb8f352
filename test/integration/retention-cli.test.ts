import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { retentionCommand } from "../../src/cli/retention.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/** `wharf retention preview|run <feed>` against a real server on loopback. */

let t: TestApp;
let server: string;
let out: string[];
let err: string[];

beforeAll(async () => {
  t = await buildTestApp();
  const upack = createUpackFixtures(t);
  await upack.createFeed("cli");
  for (const version of ["1.0.0", "2.0.0", "3.0.0"]) await upack.addVersion("cli", { name: "tool", version });
  const res = await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/update/cli",
    headers: { "x-apikey": t.adminKey },
    payload: { retentionRules: [{ keepVersionsCount: 1 }] },
  });
  expect(res.statusCode).toBe(200);
  server = await t.app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => t.close());

async function wharf(...args: string[]): Promise<number> {
  out = [];
  err = [];
  return retentionCommand(args, { config: t.config, out: (l) => out.push(l), err: (l) => err.push(l), pollMs: 20 });
}

describe("wharf retention", () => {
  it("preview prints a table and the totals, or the JSON", async () => {
    expect(await wharf("preview", "cli", "--server", server, "--api-key", t.adminKey)).toBe(0);
    expect(out[0]).toBe("PACKAGE\tVERSION\tRULE\tAGE\tLAST DOWNLOAD\tBYTES\tWHY");
    expect(out.slice(1, 3).map((line) => line.split("\t").slice(0, 3).join(" "))).toEqual([
      "tool 2.0.0 1",
      "tool 1.0.0 1",
    ]);
    expect(out.at(-1)).toMatch(/^cli: would delete 2 of 3 versions \(\d+ bytes\)$/);
    expect(await wharf("preview", "cli", "--json", "--server", server, "--api-key", t.adminKey)).toBe(0);
    expect(JSON.parse(out.join("\n"))).toMatchObject({ feed: "cli", versions: 2, examined: 3 });
  });

  it("run waits for the run and prints its summary", async () => {
    expect(await wharf("run", "cli", "--server", server, "--api-key", t.adminKey)).toBe(0);
    expect(out.at(-1)).toMatch(/^run \d+ succeeded: deleted 2 versions, \d+ bytes freed, 0 skipped$/);
    expect(await wharf("preview", "cli", "--server", server, "--api-key", t.adminKey)).toBe(0);
    expect(out.at(-1)).toMatch(/would delete 0 of 1 versions/);
  });

  it("an asset directory's preview and run name files by their paths", async () => {
    await createAssetDirectory(t, "builds", { retentionRules: [{ deletePackageIds: ["*.tmp"] }] });
    for (const path of ["nightly/app.tmp", "nightly/app.zip", "scratch.tmp"]) {
      expect((await putAsset(t, "builds", path, `content of ${path}`)).statusCode).toBeLessThan(300);
    }
    expect(await wharf("preview", "builds", "--server", server, "--api-key", t.adminKey)).toBe(0);
    expect(out[0]).toBe("FILE\tRULE\tAGE\tLAST DOWNLOAD\tBYTES\tWHY");
    expect(
      out
        .slice(1, 3)
        .map((line) => line.split("\t")[0])
        .sort(),
    ).toEqual(["nightly/app.tmp", "scratch.tmp"]);
    expect(out.at(-1)).toMatch(/^builds: would delete 2 of 3 files \(\d+ bytes\)$/);
    expect(await wharf("run", "builds", "--server", server, "--api-key", t.adminKey)).toBe(0);
    expect(out.at(-1)).toMatch(/^run \d+ succeeded: deleted 2 files, \d+ bytes freed, 0 skipped$/);
  });

  it("says what is wrong: a bad key, an unknown feed, bad usage", async () => {
    expect(await wharf("preview", "cli", "--server", server, "--api-key", "wrong")).toBe(1);
    expect(err.join("\n")).toContain("answered 403");
    expect(await wharf("run", "nope", "--server", server, "--api-key", t.adminKey)).toBe(1);
    expect(err.join("\n")).toContain("answered 404");
    expect(await wharf("prune", "cli")).toBe(2);
    expect(err.join("\n")).toContain("unknown subcommand 'prune'");
    expect(await wharf("run")).toBe(2);
  });
});
