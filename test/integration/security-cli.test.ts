import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFeedService, type FeedService } from "../../src/areas/management/index.js";
import { apiKeysCommand } from "../../src/cli/api-keys.js";
import { permissionsCommand } from "../../src/cli/permissions.js";
import { usersCommand } from "../../src/cli/users.js";
import { systemClock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic } from "../helpers/fixtures.js";

/**
 * `wharf api-keys|users|permissions`: the commands call the same services as the HTTP API, on
 * the same database, so what they create is checked over HTTP.
 */

describe("security CLI commands", () => {
  let t: TestApp;
  let feeds: FeedService;
  /** What a command printed on `out` (results) and on `err` (errors, and the usage after a usage error). */
  let lines: string[];
  let errors: string[];
  let stdin = "";

  const ctx = () => ({
    db: t.db,
    clock: systemClock,
    feeds,
    out: (line: string) => lines.push(line),
    err: (line: string) => errors.push(line),
    readStdin: async () => stdin,
  });
  async function wharf(command: "api-keys" | "users" | "permissions", ...args: string[]): Promise<number> {
    lines = [];
    errors = [];
    if (command === "api-keys") return apiKeysCommand(args, ctx());
    if (command === "users") return usersCommand(args, ctx());
    return permissionsCommand(args, ctx());
  }
  const status = async (url: string, headers: Record<string, string> = {}) =>
    (await t.app.inject({ method: "GET", url, headers })).statusCode;

  beforeAll(async () => {
    t = await buildTestApp();
    feeds = createFeedService({ db: t.db, clock: systemClock, config: t.config });
    await feeds.createFeed({ name: "Main", feedType: "universal" });
  });
  afterAll(async () => t?.close());

  describe("api-keys", () => {
    it("lists keys, starting with the bootstrap administrator key", async () => {
      expect(await wharf("api-keys", "list")).toBe(0);
      expect(lines[0]).toMatch(/^ID\s+TYPE\s+NAME\s+SCOPE\s+EXPIRES\s+LAST USED$/);
      expect(lines[1]).toMatch(/^1\s+System\s+.*full-control/);
      expect(lines.join("\n")).not.toContain(t.adminKey);
    });

    it("creates a System key, prints it once as the last line, and it works over HTTP", async () => {
      expect(await wharf("api-keys", "create", "--type", "System", "--apis", "full-control", "--name", "ops")).toBe(0);
      expect(lines[0]).toMatch(/^Created System API key \d+ \(ops\)\.$/);
      const key = lines.at(-1) as string;
      expect(key).toMatch(/^[A-Za-z0-9_-]{40,}$/);
      expect(await status("/api/security/users/list", { "x-apikey": key })).toBe(200);
      await wharf("api-keys", "list");
      expect(lines.join("\n")).not.toContain(key);
    });

    it("creates a Feed key with permissions, expiry and a chosen key", async () => {
      const chosen = "cli-chosen-key-0123456789";
      const code = await wharf(
        "api-keys",
        "create",
        "--type=feed",
        "--feed",
        "main",
        "--permissions",
        "view, add",
        "--expires",
        "2999-01-01T00:00:00Z",
        "--key",
        chosen,
      );
      expect(code, lines.join("\n")).toBe(0);
      expect(lines.at(-1)).toBe(chosen);
      expect(await status("/api/management/feeds/get/Main", { "x-apikey": chosen })).toBe(200);
      await wharf("api-keys", "list");
      expect(lines.join("\n")).toMatch(/Feed\s+feed Main: view,add\s+2999-01-01T00:00:00\.000Z/);
    });

    it("reports refused input with exit code 1 and the field", async () => {
      expect(await wharf("api-keys", "create", "--type", "System")).toBe(1);
      expect(errors).toEqual([expect.stringMatching(/^error: systemApis: /)]);
      expect(lines).toEqual([]);
      expect(await wharf("api-keys", "create", "--type", "Feed", "--feed", "nope", "--permissions", "view")).toBe(1);
      expect(errors[0]).toContain("feed");
      expect(await wharf("api-keys", "delete", "9999")).toBe(1);
    });

    it.each([
      [["create"], "needs --type"],
      [["create", "--type", "System", "--bogus"], "bogus"],
      [["delete"], "exactly one key id"],
      [["delete", "abc"], "not a key id"],
      [["list", "extra"], "takes no arguments"],
      [["rotate"], "unknown subcommand"],
      [[], "a subcommand is required"],
    ])("exits 2 with the error and usage on err for %j", async (args, message) => {
      expect(await wharf("api-keys", ...args)).toBe(2);
      expect(errors[0]).toContain(message);
      expect(errors.at(-1)).toContain("Usage:");
      expect(lines).toEqual([]);
    });

    it("deletes a key by id", async () => {
      await wharf("api-keys", "create", "--type", "System", "--apis", "metrics");
      const key = lines.at(-1) as string;
      const id = /key (\d+)/.exec(lines[0] ?? "")?.[1] as string;
      expect(await wharf("api-keys", "delete", id)).toBe(0);
      expect(lines).toEqual([`Deleted API key ${id}.`]);
      expect(await status("/metrics", { "x-apikey": key })).toBe(403);
    });
  });

  describe("users and permissions", () => {
    it("adds a user with a password from standard input", async () => {
      stdin = "alice-password-1\n";
      expect(await wharf("users", "add", "alice", "--password-stdin", "--email", "alice@example.com")).toBe(0);
      expect(lines).toEqual(["Added user 'alice'."]);
      expect(await wharf("users", "add", "bob", "--password", "bob-password-1", "--display-name", "Bob")).toBe(0);
      expect(await wharf("users", "list")).toBe(0);
      expect(lines[0]).toMatch(/^NAME\s+DISPLAY NAME\s+E-MAIL\s+GROUPS$/);
      expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(["alice", "bob"]);
      expect(await wharf("users", "list", "--search", "example")).toBe(0);
      expect(lines).toHaveLength(2);
    });

    it("grants a task with `permissions add`, which then applies over HTTP", async () => {
      expect(await status("/api/security/users/list", basic("alice", "alice-password-1"))).toBe(403);
      expect(await wharf("permissions", "add", "--user", "ALICE", "--task", "administer")).toBe(0);
      expect(lines).toEqual([
        expect.stringMatching(/^Added permission \d+: allow Administer globally for user alice$/),
      ]);
      expect(await status("/api/security/users/list", basic("alice", "alice-password-1"))).toBe(200);
    });

    it("grants Anonymous a feed-scoped task, lists and removes it", async () => {
      expect(await status("/api/management/feeds/get/Main")).toBe(401);
      expect(
        await wharf("permissions", "add", "--anonymous", "--task", "View & Download Packages", "--feed", "main"),
      ).toBe(0);
      const id = /permission (\d+)/.exec(lines[0] ?? "")?.[1] as string;
      expect(await status("/api/management/feeds/get/Main")).toBe(200);
      expect(await wharf("permissions", "list")).toBe(0);
      expect(lines).toContain(`${id}: allow View & Download Packages on feed Main for user Anonymous`);
      expect(await wharf("permissions", "remove", id)).toBe(0);
      expect(await status("/api/management/feeds/get/Main")).toBe(401);
      expect(await wharf("permissions", "remove", id)).toBe(1);
      expect(errors[0]).toContain("No permission");
    });

    it("manages groups and memberships", async () => {
      expect(await wharf("users", "groups", "add", "Developers", "--members", "alice,bob")).toBe(0);
      expect(lines).toEqual(["Saved group 'Developers' (2 members)."]);
      expect(await wharf("permissions", "add", "--group", "developers", "--task", "Administer", "--deny")).toBe(0);
      expect(lines[0]).toMatch(/deny Administer globally for group Developers$/);
      expect(await status("/api/security/users/list", basic("alice", "alice-password-1"))).toBe(403);
      expect(await wharf("users", "edit", "alice", "--groups", "")).toBe(0);
      expect(await status("/api/security/users/list", basic("alice", "alice-password-1"))).toBe(200);
      expect(await wharf("users", "groups")).toBe(0);
      expect(lines).toEqual([expect.stringMatching(/^GROUP\s+MEMBERS$/), expect.stringMatching(/^Developers\s+bob$/)]);
      expect(await wharf("users", "groups", "delete", "developers")).toBe(0);
      expect(lines).toEqual(["Deleted group 'developers'."]);
    });

    it("edits and deletes users", async () => {
      stdin = "alice-password-2";
      expect(await wharf("users", "edit", "alice", "--password-stdin", "--email", "")).toBe(0);
      expect(await status("/api/security/users/list", basic("alice", "alice-password-1"))).toBe(403);
      expect(await status("/api/security/users/list", basic("alice", "alice-password-2"))).toBe(200);
      expect(await wharf("users", "edit", "ghost", "--email", "x@y")).toBe(1);
      expect(await wharf("users", "delete", "bob")).toBe(0);
      expect(lines).toEqual(["Deleted user 'bob'."]);
      expect(await wharf("users", "delete", "bob")).toBe(0);
      expect(lines).toEqual(["No user is named 'bob'."]);
    });

    it("lists the tasks", async () => {
      expect(await wharf("permissions", "tasks")).toBe(0);
      expect(lines[0]).toMatch(/^Administer \(built-in, global\): /);
      expect(lines).toContain(
        "View & Download Packages (built-in, feed-scopable): Feeds_ViewFeed, Feeds_DownloadPackage",
      );
    });

    it.each([
      ["users", ["add"], "needs a name"],
      ["users", ["add", "x", "--password", "p", "--password-stdin"], "not both"],
      ["users", ["delete", "x", "--email", "e"], "does not apply"],
      ["users", ["groups", "rename", "x"], "unknown subcommand"],
      ["users", ["edit", "alice"], "nothing to change"],
      ["users", ["list", "extra"], "unexpected argument"],
      ["permissions", ["add", "--task", "Administer"], "exactly one of --user, --group or --anonymous"],
      ["permissions", ["add", "--user", "a", "--anonymous", "--task", "Administer"], "exactly one of"],
      ["permissions", ["add", "--user", "alice"], "needs --task"],
      ["permissions", ["add", "--user", "alice", "--task", "t", "--feed", "a", "--feed-group", "b"], "not both"],
      ["permissions", ["remove"], "exactly one permission id"],
      ["permissions", ["list", "--deny"], "does not apply"],
      ["permissions", ["grant"], "unknown subcommand"],
    ] as const)("exits 2 with the error and usage on err: %s %j", async (command, args, message) => {
      expect(await wharf(command, ...args)).toBe(2);
      expect(errors[0]).toContain(message);
      expect(errors.at(-1)).toContain("Usage:");
      expect(lines).toEqual([]);
    });

    it.each(["api-keys", "users", "permissions"] as const)("%s --help prints the usage on out", async (command) => {
      expect(await wharf(command, "--help")).toBe(0);
      expect(lines).toEqual([expect.stringMatching(new RegExp(`^Usage:\\n  wharf ${command} `))]);
      expect(errors).toEqual([]);
    });

    it("exits 1 for refused input, naming the field", async () => {
      stdin = "";
      expect(await wharf("users", "add", "anonymous", "--password", "p")).toBe(1);
      expect(errors[0]).toContain("name");
      expect(await wharf("users", "add", "carol", "--groups", "nope")).toBe(1);
      expect(errors[0]).toContain("groups");
      expect(await wharf("permissions", "add", "--user", "ghost", "--task", "Administer")).toBe(1);
      expect(errors[0]).toContain("user");
      expect(await wharf("permissions", "add", "--anonymous", "--task", "Administer", "--feed", "Main")).toBe(1);
      expect(errors[0]).toContain("task");
      expect(await wharf("users", "add", "dave", "--password-stdin")).toBe(2);
      expect(errors[0]).toContain("empty password");
      expect(await wharf("users", "add", "erin", "--password", "a")).toBe(1);
      expect(errors[0]).toContain("password: must be at least 8 characters");
      expect(await wharf("users", "edit", "alice", "--password", "qwertyuiop")).toBe(1);
      expect(errors[0]).toContain("password: is one of the most common passwords");
      expect(lines).toEqual([]);
    });
  });
});
