import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applicationsCommand } from "../../src/cli/applications.js";
import { environmentsCommand } from "../../src/cli/environments.js";
import { pipelinesCommand } from "../../src/cli/pipelines.js";
import { systemClock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";

/**
 * `wharf applications|environments|pipelines`: the commands call the catalog service the HTTP API
 * calls, on the same database, so what they create is read back over HTTP (and used by a release).
 */

let t: TestApp;
let stdin = "";

type Command = "applications" | "environments" | "pipelines";
const COMMANDS = { applications: applicationsCommand, environments: environmentsCommand, pipelines: pipelinesCommand };

/** `out` is what went to results, `errors` what went to err (errors, and the usage after a usage error). */
async function wharf(command: Command, ...args: string[]) {
  const out: string[] = [];
  const errors: string[] = [];
  const code = await COMMANDS[command](args, {
    db: t.db,
    clock: systemClock,
    out: (line) => out.push(line),
    err: (line) => errors.push(line),
    readStdin: async () => stdin,
  });
  return { code, out, text: out.join("\n"), errors };
}

const http = async (method: "GET" | "POST", url: string, body?: unknown) =>
  t.app.inject({
    method,
    url,
    headers: { "x-apikey": t.adminKey, ...(body !== undefined && { "content-type": "application/json" }) },
    ...(body !== undefined && { payload: JSON.stringify(body) }),
  });

async function writeJson(name: string, content: unknown): Promise<string> {
  const file = path.join(t.dataDir, name);
  await fs.writeFile(file, typeof content === "string" ? content : JSON.stringify(content));
  return file;
}

const WEB_PIPELINE = {
  name: "Web",
  stages: [
    { name: "Integration", environmentName: "Integration", plan: [{ type: "log", message: "to $EnvironmentName" }] },
    { name: "Production", environmentName: "Production" },
  ],
};

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

describe("wharf environments", () => {
  it("says there are none, creates two, lists them as a table, and HTTP sees them", async () => {
    expect(await wharf("environments", "list")).toMatchObject({ code: 0, out: ["No environments."], errors: [] });

    const created = await wharf("environments", "create", "Integration");
    expect(created).toMatchObject({ code: 0, errors: [] });
    expect(JSON.parse(created.text)).toEqual({
      id: expect.any(Number),
      name: "Integration",
      active: true,
      variables: {},
    });
    expect((await wharf("environments", "create", "Production")).code).toBe(0);

    const listed = await wharf("environments", "list");
    expect(listed.code).toBe(0);
    expect(listed.out[0]).toMatch(/^ID\s+NAME\s+PARENT\s+ACTIVE\s+VARIABLES$/);
    expect(listed.out.slice(1)).toEqual([
      expect.stringMatching(/^\d+\s+Integration\s+true$/),
      expect.stringMatching(/^\d+\s+Production\s+true$/),
    ]);

    const res = await http("GET", "/api/infrastructure/environments/list");
    expect(res.statusCode).toBe(200);
    expect((res.json() as { name: string }[]).map((e) => e.name)).toEqual(["Integration", "Production"]);
  });

  it("refuses a taken or invalid name with exit 1 and the service's message", async () => {
    const taken = await wharf("environments", "create", "integration");
    expect(taken.code).toBe(1);
    expect(taken.errors).toEqual([expect.stringMatching(/^error: .*/)]);
    expect(taken.out).toEqual([]);
    const invalid = await wharf("environments", "create", "1-bad name");
    expect(invalid).toMatchObject({ code: 1, errors: ["error: Invalid environment name '1-bad name'."] });
  });

  it("deletes one by name (any case); deleting it again is not found", async () => {
    expect((await wharf("environments", "create", "Scratch")).code).toBe(0);
    expect(await wharf("environments", "delete", "SCRATCH")).toMatchObject({
      code: 0,
      out: ["Deleted environment 'SCRATCH'."],
    });
    const again = await wharf("environments", "delete", "Scratch");
    expect(again.code).toBe(1);
    expect(again.errors[0]).toContain("'Scratch' was not found");
  });
});

describe("wharf applications", () => {
  it("creates applications with each release usage and lists them", async () => {
    const web = await wharf("applications", "create", "Web");
    expect(web).toMatchObject({ code: 0, errors: [] });
    expect(JSON.parse(web.text)).toEqual({
      id: expect.any(Number),
      name: "Web",
      active: true,
      releaseUsage: "Required",
      buildNumberScheme: "Sequential",
    });
    const lib = await wharf("applications", "create", "Lib", "--release-usage", "NONE");
    expect(JSON.parse(lib.text)).toMatchObject({ name: "Lib", releaseUsage: "Disabled" });
    const tool = await wharf("applications", "create", "Tool", "--release-usage=optional");
    expect(JSON.parse(tool.text)).toMatchObject({ name: "Tool", releaseUsage: "Optional" });

    const listed = await wharf("applications", "list");
    expect(listed.out[0]).toMatch(/^ID\s+NAME\s+RELEASE USAGE\s+BUILD NUMBERS\s+ACTIVE$/);
    // by name, as the HTTP list
    expect(listed.out.slice(1).map((line) => line.split(/\s+/).slice(1, 3))).toEqual([
      ["Lib", "none"],
      ["Tool", "optional"],
      ["Web", "required"],
    ]);
    const res = await http("GET", "/api/applications/list");
    expect((res.json() as { name: string; releaseUsage: string }[]).map((a) => [a.name, a.releaseUsage])).toEqual([
      ["Lib", "Disabled"],
      ["Tool", "Optional"],
      ["Web", "Required"],
    ]);
  });

  it("refuses a taken name with exit 1", async () => {
    const taken = await wharf("applications", "create", "web");
    expect(taken.code).toBe(1);
    expect(taken.errors[0]).toMatch(/^error: /);
  });
});

describe("wharf pipelines", () => {
  it("creates a pipeline from a JSON file; show prints what the HTTP API answers", async () => {
    const file = await writeJson("web-pipeline.json", WEB_PIPELINE);
    const created = await wharf("pipelines", "create", "--file", file);
    expect(created).toMatchObject({ code: 0, errors: [] });
    expect(JSON.parse(created.text)).toMatchObject({ name: "Web", rejectOlderBuilds: true });

    const shown = await wharf("pipelines", "show", "web");
    expect(shown.code).toBe(0);
    const res = await http("GET", "/api/pipelines/get/Web");
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(shown.text)).toEqual(res.json());
    expect(JSON.parse(shown.text).stages[0].plan[0]).toMatchObject({ type: "log", message: "to $EnvironmentName" });
  });

  it("is what a release of an application created by the CLI uses", async () => {
    const res = await http("POST", "/api/releases/create", {
      applicationName: "Web",
      releaseNumber: "1.0",
      pipelineName: "Web",
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ applicationName: "Web", pipelineName: "Web" });
  });

  it("creates from standard input with --file -, ignoring the id `show` prints", async () => {
    const shown = JSON.parse((await wharf("pipelines", "show", "Web")).text) as Record<string, unknown>;
    stdin = JSON.stringify({ ...shown, name: "Web-hotfix", rejectOlderBuilds: false });
    const created = await wharf("pipelines", "create", "--file", "-");
    expect(created.code, created.errors.join("\n")).toBe(0);
    expect(JSON.parse(created.text)).toMatchObject({ name: "Web-hotfix", rejectOlderBuilds: false });
    expect(JSON.parse(created.text).id).not.toBe(shown.id);

    const listed = await wharf("pipelines", "list");
    expect(listed.out).toEqual([
      expect.stringMatching(/^ID\s+NAME\s+REJECT OLDER\s+STAGES$/),
      expect.stringMatching(/^\d+\s+Web\s+true\s+Integration -> Production$/),
      expect.stringMatching(/^\d+\s+Web-hotfix\s+false\s+Integration -> Production$/),
    ]);
  });

  it.each([
    ["not JSON", "{ name: Web", /is not JSON/],
    ["an unknown field", { ...WEB_PIPELINE, name: "X", colour: "blue" }, /: \(top level\): .*colour/],
    ["no stages", { name: "X", stages: [] }, /: stages: /],
    ["a stage without a name", { name: "X", stages: [{ environmentName: "Integration" }] }, /: stages\.0\.name: /],
    ["an unknown step type", { name: "X", stages: [{ name: "A", plan: [{ type: "reboot" }] }] }, /Stage 'A'/],
    ["a taken name", { ...WEB_PIPELINE, name: "WEB" }, /^error: /],
    ["an unknown plan", { name: "X", stages: [{ name: "A", planName: "no-such-plan" }] }, /no-such-plan/],
  ])("refuses a file with %s with exit 1", async (_, content, message) => {
    const file = await writeJson("bad.json", content);
    const result = await wharf("pipelines", "create", "--file", file);
    expect(result.code, result.text).toBe(1);
    expect(result.out).toEqual([]);
    expect(result.errors).toEqual([expect.stringMatching(message)]);
  });

  it("refuses a file that does not exist with exit 1", async () => {
    const missing = path.join(t.dataDir, "missing.json");
    expect(await wharf("pipelines", "create", "--file", missing)).toMatchObject({
      code: 1,
      errors: [`error: cannot read ${missing}: no such file`],
    });
  });

  it("will not delete a pipeline a release uses; deletes an unused one, which is then gone", async () => {
    const used = await wharf("pipelines", "delete", "Web");
    expect(used.code).toBe(1);
    expect(used.errors[0]).toMatch(/^error: /);
    expect(await wharf("pipelines", "delete", "web-hotfix")).toMatchObject({
      code: 0,
      out: ["Deleted pipeline 'web-hotfix'."],
    });
    const gone = await wharf("pipelines", "show", "Web-hotfix");
    expect(gone.code).toBe(1);
    expect(gone.errors[0]).toContain("'Web-hotfix' was not found");
    expect((await http("GET", "/api/pipelines/get/Web-hotfix")).statusCode).toBe(404);
  });
});

describe("usage errors", () => {
  it.each<[Command, string[], string]>([
    ["applications", [], "a subcommand is required"],
    ["applications", ["delete", "Web"], "unknown subcommand 'delete'"],
    ["applications", ["create"], "needs an application name"],
    ["applications", ["create", "A", "B"], "unexpected argument 'B'"],
    [
      "applications",
      ["create", "A", "--release-usage", "sometimes"],
      "--release-usage takes required, optional or none",
    ],
    ["applications", ["list", "--release-usage", "none"], "takes no arguments"],
    ["applications", ["create", "A", "--colour", "blue"], "colour"],
    ["environments", [], "a subcommand is required"],
    ["environments", ["update", "X"], "unknown subcommand 'update'"],
    ["environments", ["create"], "needs an environment name"],
    ["environments", ["delete", "A", "B"], "unexpected argument 'B'"],
    ["environments", ["list", "extra"], "takes no arguments"],
    ["pipelines", [], "a subcommand is required"],
    ["pipelines", ["update", "Web"], "unknown subcommand 'update'"],
    ["pipelines", ["create"], "needs --file"],
    ["pipelines", ["create", "Web", "--file", "p.json"], "takes no arguments"],
    ["pipelines", ["show"], "needs a pipeline name"],
    ["pipelines", ["show", "Web", "--file", "p.json"], "--file does not apply to 'pipelines show'"],
    ["pipelines", ["delete", "A", "B"], "unexpected argument 'B'"],
  ])("wharf %s %j exits 2 with the error and the usage on err", async (command, args, message) => {
    const result = await wharf(command, ...args);
    expect(result.code).toBe(2);
    expect(result.out).toEqual([]);
    expect(result.errors[0]).toMatch(/^error: /);
    expect(result.errors[0]).toContain(message);
    expect(result.errors.at(-1)).toContain(`Usage:\n  wharf ${command} list`);
  });

  it.each<Command>(["applications", "environments", "pipelines"])(
    "wharf %s --help prints the usage on out",
    async (c) => {
      const result = await wharf(c, "--help");
      expect(result).toMatchObject({ code: 0, errors: [] });
      expect(result.text).toContain(`wharf ${c} list`);
      expect((await wharf(c, "help")).text).toBe(result.text);
    },
  );
});
