import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/areas/security/api-key-hash.js";
import { rolesCommand } from "../../src/cli/roles.js";
import { serversCommand } from "../../src/cli/servers.js";
import { systemClock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { expectJson } from "../helpers/responses.js";

/** `wharf servers|roles`: the same services as `/api/infrastructure/...`, checked over HTTP. */
describe("infrastructure CLI commands", () => {
  let t: TestApp;
  let deployRoot: string;
  let lines: string[];
  let errors: string[];
  let stdin = "";
  type Json = Record<string, unknown>;

  const ctx = () => ({
    db: t.db,
    clock: systemClock,
    config: t.config,
    out: (line: string) => lines.push(line),
    err: (line: string) => errors.push(line),
    readStdin: async () => stdin,
  });
  async function wharf(command: "servers" | "roles", ...args: string[]): Promise<number> {
    lines = [];
    errors = [];
    return command === "servers" ? serversCommand(args, ctx()) : rolesCommand(args, ctx());
  }
  const get = async (url: string) =>
    expectJson(await t.app.inject({ method: "GET", url, headers: { "x-apikey": t.adminKey } }));

  beforeAll(async () => {
    deployRoot = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-infra-cli-")));
    t = await buildTestApp({ env: { WHARF_DEPLOY_ROOT: deployRoot } });
  });
  afterAll(async () => {
    await t?.close();
    await fs.rm(deployRoot, { recursive: true, force: true });
  });

  it("creates roles with items from a file and dependencies, refusing a cycle", async () => {
    const file = path.join(deployRoot, "items.json");
    await fs.writeFile(file, JSON.stringify([{ type: "directory", path: "/srv/web", mode: "0755" }]));
    expect(await wharf("roles", "create", "base")).toBe(0);
    expect(await wharf("roles", "create", "web", "--depends-on", "base", "--items-file", file)).toBe(0);
    expect(JSON.parse(lines.join("\n"))).toMatchObject({ name: "web", dependsOn: ["base"] });
    expect(await wharf("roles", "update", "base", "--depends-on", "web")).toBe(1);
    expect(errors.join("\n")).toContain("base -> web -> base");
    stdin = JSON.stringify({
      items: [{ type: "file", path: "/srv/a.conf", content: "secret-from-stdin", sensitive: true }],
    });
    expect(await wharf("roles", "update", "base", "--items-file", "-", "--description", "Base")).toBe(0);
    expect(lines.join("\n")).not.toContain("secret-from-stdin");
    stdin = JSON.stringify(Array.from({ length: 10_001 }, (_, i) => ({ type: "process", pattern: `p${i}` })));
    expect(await wharf("roles", "create", "huge", "--items-file", "-")).toBe(1);
    expect(errors.join("\n")).toContain("10000 at most");
    expect(await wharf("roles", "list")).toBe(0);
    expect(lines[0]).toMatch(/^NAME\s+DEPENDS ON\s+ITEMS\s+DESCRIPTION$/);
    expect(lines[1]).toMatch(/^base\s+1\s+Base$/);
    expect(lines[2]).toMatch(/^web\s+base\s+1$/);
    const roles = (await get("/api/infrastructure/roles/list?name=base")) as Json[];
    expect(roles[0]).toMatchObject({ description: "Base" });
    expect(JSON.stringify(roles)).not.toContain("secret-from-stdin");
  });

  it("creates, updates, shows and deletes local servers with roles and environments", async () => {
    await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/environments/create/Prod",
      headers: { "x-apikey": t.adminKey, "content-type": "application/json" },
      payload: "{}",
    });
    const root = path.join(deployRoot, "web1");
    expect(
      await wharf(
        "servers",
        "create",
        "web1",
        "--type",
        "local",
        "--root",
        root,
        "--role",
        "base",
        "--role",
        "web",
        "--environment",
        "prod",
        "--drift",
        "automaticallyRemediate",
      ),
    ).toBe(0);
    expect(JSON.parse(lines.join("\n"))).toMatchObject({
      name: "web1",
      roles: ["base", "web"],
      environments: ["Prod"],
      drift: "automaticallyRedmediate",
      rootPath: root,
    });
    expect(await wharf("servers", "update", "web1", "--name", "web-1", "--active", "false", "--role=web")).toBe(0);
    const servers = (await get("/api/infrastructure/servers/list?name=web-1")) as Json[];
    expect(servers[0]).toMatchObject({ active: false, roles: ["web"], environments: ["Prod"] });
    expect(await wharf("servers", "get", "web-1")).toBe(0);
    expect(JSON.parse(lines.join("\n"))).toEqual(servers[0]);
    expect(await wharf("servers", "list")).toBe(0);
    expect(lines[1]).toMatch(/^web-1\s+local\s+automaticallyRedmediate\s+false\s+web\s+Prod\s+0$/);

    expect(await wharf("servers", "create", "bad", "--type", "local", "--root", "/etc")).toBe(1);
    expect(errors.join("\n")).toContain("WHARF_DEPLOY_ROOT");
    expect(await wharf("servers", "create", "nope")).toBe(2);
    expect(errors.join("\n")).toContain("--type");
    expect(await wharf("servers", "create", "x", "--type", "local", "--role")).toBe(2);
    expect(await wharf("servers", "delete", "web-1")).toBe(0);
    expect(await wharf("servers", "delete", "web-1")).toBe(1);
    expect(errors.join("\n")).toContain("'web-1' was not found");
  });

  it("prints an agent key once, issues a new one and revokes it", async () => {
    expect(await wharf("servers", "create", "agent1", "--type", "agent")).toBe(0);
    const first = JSON.parse(lines[0] as string) as Json;
    const hash = () =>
      (
        t.db.prepare("SELECT agent_key_hash FROM servers WHERE name_key = 'agent1'").get() as {
          agent_key_hash: string | null;
        }
      ).agent_key_hash;
    expect(hash()).toBe(hashApiKey(first.agentKey as string));
    expect(await wharf("servers", "agent-key", "agent1")).toBe(0);
    const second = lines.at(-1) as string;
    expect(second).not.toBe(first.agentKey);
    expect(hash()).toBe(hashApiKey(second));
    expect(await wharf("servers", "get", "agent1")).toBe(0);
    expect(lines.join("\n")).not.toContain(second);
    expect(await wharf("servers", "revoke-agent-key", "agent1")).toBe(0);
    expect(hash()).toBeNull();
    expect(await wharf("servers", "--help")).toBe(0);
    expect(lines.join("\n")).toContain("wharf servers create <name> --type local|agent|ssh");
  });
});
