import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFeedService, type FeedService } from "../../src/areas/management/index.js";
import { feedsCommand } from "../../src/cli/feeds.js";
import { loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { type Db, openDatabase } from "../../src/storage/database.js";

describe("wharf feeds (CLI)", () => {
  let dir: string;
  let db: Db;
  let feeds: FeedService;
  /** `text` is what went to `out` (results, --help), `errors` what went to `err` (errors, usage after a usage error). */
  const run = async (...args: string[]) => {
    const lines: string[] = [];
    const errors: string[] = [];
    const code = await feedsCommand(args, {
      feeds,
      out: (line) => lines.push(line),
      err: (line) => errors.push(line),
    });
    return { code, text: lines.join("\n"), errors: errors.join("\n") };
  };

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-cli-"));
    db = openDatabase(path.join(dir, "wharf.sqlite"));
    const config = loadConfig({ WHARF_DATA_DIR: dir, WHARF_BASE_URL: "https://pkg.example.com/" });
    feeds = createFeedService({ db, clock: systemClock, config });
  });
  afterAll(async () => {
    db.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it("creates, reads, updates, lists and deletes a feed", async () => {
    const created = await run("create", "tools", "--type", "Universal", "--description", "Build tools");
    expect(created.code).toBe(0);
    expect(created.errors).toBe("");
    expect(JSON.parse(created.text)).toMatchObject({
      name: "tools",
      feedType: "universal",
      description: "Build tools",
      endpointUrl: "https://pkg.example.com/upack/tools",
    });
    expect(JSON.parse((await run("get", "TOOLS")).text).name).toBe("tools");

    const updated = await run("update", "tools", "--active", "false", "--description", "");
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.text)).toMatchObject({ active: false });
    expect(JSON.parse(updated.text)).not.toHaveProperty("description");

    await run("create", "docs", "--type", "asset");
    const list = await run("list");
    expect(list.text.split("\n")).toEqual([
      "NAME   TYPE       ACTIVE  DESCRIPTION",
      "docs   asset      true",
      "tools  universal  false",
    ]);

    expect(await run("delete", "tools")).toEqual({ code: 0, text: "Deleted feed 'tools'.", errors: "" });
    expect(await run("get", "tools")).toEqual({ code: 1, text: "", errors: "error: The feed 'tools' was not found." });
  });

  it("reports Wharf's refusals with exit code 1", async () => {
    expect(await run("create", "docs", "--type", "universal")).toEqual({
      code: 1,
      text: "",
      errors: "error: a feed named 'docs' already exists",
    });
    const badType = await run("create", "x", "--type", "cobol");
    expect(badType.code).toBe(1);
    expect(badType.errors).toContain("a valid feed type is required");
  });

  it.each([
    [[]],
    [["frobnicate"]],
    [["get"]],
    [["create", "x"]],
    [["create", "x", "--type"]],
    [["update", "docs"]],
    [["update", "docs", "--active", "maybe"]],
    [["list", "extra"]],
    [["get", "docs", "--type", "universal"]],
    [["delete", "a", "b"]],
    [["create", "x", "--type", "universal", "--colour", "red"]],
  ])("answers bad arguments %j with the error and usage on err, and exit code 2", async (args) => {
    const result = await run(...args);
    expect(result.code).toBe(2);
    expect(result.text).toBe("");
    expect(result.errors).toMatch(/^error: /);
    expect(result.errors).toContain("Usage:");
  });

  it("prints usage on out for --help with exit code 0, and 'No feeds.' for an empty list", async () => {
    for (const help of [["--help"], ["-h"], ["help"], ["get", "--help"]]) {
      const result = await run(...help);
      expect(result).toMatchObject({ code: 0, errors: "" });
      expect(result.text).toMatch(/^Usage:/);
    }
    await run("delete", "docs");
    expect(await run("list")).toEqual({ code: 0, text: "No feeds.", errors: "" });
  });

  it("prints errors on out when the caller gives no err", async () => {
    const lines: string[] = [];
    expect(await feedsCommand(["frobnicate"], { feeds, out: (line) => lines.push(line) })).toBe(2);
    expect(lines[0]).toBe("error: unknown subcommand 'frobnicate'");
    expect(lines.at(-1)).toContain("Usage:");
  });
});
