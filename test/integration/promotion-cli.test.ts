import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { promoteCommand, promotionsCommand, repackageCommand } from "../../src/cli/promotions.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createFeedKey, createUser, grant } from "../helpers/fixtures.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * `wharf promote`, `wharf promotions list` and `wharf repackage` against a real server on loopback:
 * they send what the API takes, print what it answers, and exit 1 with the server's refusal.
 */

let t: TestApp;
let server: string;
let out: string[];
let err: string[];

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  for (const name of ["ci", "stable"]) {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: { "x-apikey": t.adminKey },
      payload: { name, feedType: "universal" },
    });
    expect(res.statusCode).toBe(201);
  }
  const bytes = await buildUpack({ group: "team", name: "svc", version: "3.0.0-beta.1" });
  const upload = await t.app.inject({
    method: "PUT",
    url: "/upack/ci/upload",
    headers: { "x-apikey": t.adminKey },
    payload: bytes,
  });
  expect(upload.statusCode).toBe(201);
  server = await t.app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => t.close());

type Command = typeof promoteCommand;

async function wharf(command: Command, ...args: string[]): Promise<number> {
  out = [];
  err = [];
  return command(args, { config: t.config, out: (line) => out.push(line), err: (line) => err.push(line) });
}

const target = () => ["--server", server, "--api-key", t.adminKey];

describe("wharf promote / promotions / repackage", () => {
  it("repackages, promotes and lists over HTTP", async () => {
    expect(
      await wharf(repackageCommand, "ci", "team/svc", "3.0.0-beta.1", "3.0.0", "--comments", "GA", ...target()),
    ).toBe(0);
    expect(out).toEqual(["Repackaged team/svc 3.0.0-beta.1 (ci) as 3.0.0 in ci."]);

    expect(
      await wharf(promoteCommand, "ci", "team/svc", "latest-stable", "stable", "--comments", "ship it", ...target()),
    ).toBe(0);
    expect(out).toEqual(["Promoted team/svc 3.0.0 from ci to stable."]);

    expect(await wharf(promotionsCommand, "list", "--to-feed", "stable", "--package", "team/svc", ...target())).toBe(0);
    expect(out[0]).toMatch(/^DATE\s+PACKAGE\s+VERSION\s+FROM\s+TO\s+BY\s+COMMENTS$/);
    expect(out[1]).toMatch(/team\/svc\s+3\.0\.0\s+ci\s+stable\s+.*ship it$/);
    expect(out).toHaveLength(2);

    expect(await wharf(promotionsCommand, "list", "--feed", "ci", "--version", "9.9.9", ...target())).toBe(0);
    expect(out).toEqual(["No promotions."]);
  });

  it("the server's refusals exit 1 with its message; bad usage and a missing key exit 2", async () => {
    // A user (X-ApiKey: user:password, docs/compat.md 0.1) who may promote but not overwrite.
    const userId = await createUser(t.database, "promoter", "promoter-password-1");
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "ci" });
    await grant(t.database, { user: userId, attributes: ["Feeds_AcceptPackagePromotions"], feed: "stable" });
    const asUser = ["--server", server, "--api-key", "promoter:promoter-password-1"];
    expect(await wharf(promoteCommand, "ci", "team/svc", "3.0.0", "stable", ...asUser)).toBe(1);
    expect(err.join("\n")).toMatch(/answered 409: .*already exists/);

    const weak = await createFeedKey(t.database, "ci", ["view"]);
    expect(
      await wharf(repackageCommand, "ci", "team/svc", "3.0.0", "3.0.1", "--server", server, "--api-key", weak),
    ).toBe(1);
    expect(err.join("\n")).toContain("answered 403");

    expect(await wharf(promoteCommand, "ci", "team/svc", "3.0.0", ...target())).toBe(2);
    expect(err.join("\n")).toContain("missing <toFeed>");
    expect(await wharf(promotionsCommand, "show", ...target())).toBe(2);
    expect(err.join("\n")).toContain("unknown subcommand 'show'");

    const saved = process.env.WHARF_API_KEY;
    delete process.env.WHARF_API_KEY;
    try {
      expect(await wharf(promoteCommand, "ci", "team/svc", "3.0.0", "stable", "--server", server)).toBe(2);
      expect(err.join("\n")).toContain("WHARF_API_KEY");
    } finally {
      if (saved !== undefined) process.env.WHARF_API_KEY = saved;
    }
    expect(await wharf(promoteCommand, "--help")).toBe(0);
    expect(out.join("\n")).toContain("Usage: wharf promote");
  });
});
