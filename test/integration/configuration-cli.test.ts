import fs from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configCommand } from "../../src/cli/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { type ConfigurationWorld, configurationWorld, jobEnded, localServer, role } from "../helpers/configuration.js";

/**
 * `wharf config status|check|remediate|items` on the data directory's database while a server
 * runs on it: checks run in the CLI's process, remediation jobs are created for the server's job
 * runner, which takes them within its poll (1 s).
 */
let w: ConfigurationWorld;
let lines: string[];
let errors: string[];

beforeAll(async () => {
  w = await configurationWorld();
  await role(w, "site", { items: [{ type: "file", path: "/www/index.html", content: "<p>cli</p>\n", mode: "0644" }] });
  await localServer(w, "cli1", { roles: ["site"] });
});
afterAll(async () => {
  await w?.close();
});

async function wharf(...args: string[]): Promise<number> {
  lines = [];
  errors = [];
  return configCommand(args, {
    db: w.t.db,
    clock: systemClock,
    config: w.t.config,
    feeds: undefined as never, // not reached: no package items here
    out: (line) => lines.push(line),
    err: (line) => errors.push(line),
  });
}

describe("wharf config", () => {
  it("checks a server here and now, shows its status and items", async () => {
    expect(await wharf("check", "--server", "cli1")).toBe(0);
    expect(lines.join("\n")).toMatch(/server\s+cli1\s+drifted/);
    expect(await wharf("items", "cli1")).toBe(0);
    expect(lines.join("\n")).toMatch(/file\s+\/www\/index\.html\s+drifted\s+site/);
    expect(await wharf("status", "--server", "cli1", "--json")).toBe(0);
    expect(JSON.parse(lines.join("\n"))).toMatchObject({ type: "server", name: "cli1", status: "drifted" });
    expect(await wharf("status")).toBe(0);
    expect(lines.join("\n")).toMatch(/role\s+site\s+drifted/);
  });

  it("creates a remediation job that the running server executes", async () => {
    expect(await wharf("remediate", "server", "cli1", "--job", "From the CLI")).toBe(0);
    const token = lines[0] as string;
    expect(token).toMatch(/^\d+$/);
    expect(await jobEnded(w, token)).toBe("completed");
    expect(await fs.readFile(w.onDisk("cli1", "/www/index.html"), "utf8")).toBe("<p>cli</p>\n");
    expect(await wharf("status", "--role", "site", "--json")).toBe(0);
    expect(JSON.parse(lines.join("\n"))).toMatchObject({ type: "role", status: "current" });
  });

  it("refuses bad arguments (2) and unknown entities (1)", async () => {
    expect(await wharf("remediate", "planet", "x")).toBe(2);
    expect(await wharf("status", "--server", "a", "--role", "b")).toBe(2);
    expect(await wharf("remediate", "server", "cli1", "--start", "soon")).toBe(1);
    expect(errors.join("\n")).toContain("start");
    expect(await wharf("check", "--server", "nope")).toBe(1);
    expect(await wharf("items", "nope")).toBe(1);
    expect(await wharf("frobnicate")).toBe(2);
  });
});
