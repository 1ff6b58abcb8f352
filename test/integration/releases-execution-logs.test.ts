import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createUser, grant } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * `GET /executions/logs?executionId=<id>&level=0` with Basic user:password (docs/compat.md 7.5 step 7):
 * what the Jenkins BuildMaster plugin prints after a failed deployment (JBM BuildMasterApi.getExecutionLog,
 * executionId = the deployment id it was answered). A real deployment fails in the job runner.
 */
type Json = Record<string, unknown>;
let t: TestApp;
let f: ReleasesFixtures;
let failed: Json;
const USER = { name: "jenkins", password: "s3cret-Pa55" };

beforeAll(async () => {
  t = await buildTestApp();
  f = releasesFixtures(t);
  await f.setup("Environments only");
  f.ok(
    await f.json("POST", "/api/pipelines/create", {
      name: "Logs",
      stages: [
        {
          name: "Integration",
          environmentName: "Integration",
          plan: [
            { type: "log", message: "copying build $BuildNumber" },
            { type: "warn", message: "disk almost full" },
            { type: "fail", message: "no space left on device" },
          ],
        },
      ],
    }),
  );
  const app = f.ok<{ id: number }>(await f.json("POST", "/api/applications/create", { name: "Logs" }));
  f.ok(
    await f.json("POST", "/api/releases/create", { applicationId: app.id, releaseNumber: "1.0", pipelineName: "Logs" }),
  );
  const build = f.ok<Json>(
    await f.json("POST", "/api/releases/builds/create", { applicationId: app.id, releaseNumber: "1.0" }),
  );
  for (let attempt = 0; attempt < 400; attempt++) {
    const [latest] = f.ok<Json[]>(await f.json("GET", `/api/releases/builds/deployments?buildId=${String(build.id)}`));
    if (latest && latest.status !== "pending" && latest.status !== "executing") {
      failed = latest;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(failed).toMatchObject({ status: "failed" });
  const user = await createUser(t.database, USER.name, USER.password);
  await grant(t.database, { user, attributes: ["Applications_View"] });
  await createUser(t.database, "stranger", USER.password);
});
afterAll(async () => t.close());

const logs = (query: string, headers: Record<string, string> = basic(USER.name, USER.password)) =>
  t.app.inject({ method: "GET", url: `/executions/logs?${query}`, headers });

describe("GET /executions/logs (docs/compat.md 7.5 step 7)", () => {
  it("serves the failed deployment's log as plain text, one line per entry, to Basic user:password", async () => {
    const res = await logs(`executionId=${String(failed.id)}&level=0`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("text/plain; charset=utf-8");
    const lines = res.body.split("\n");
    expect(lines.pop()).toBe("");
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z (DEBUG|INFO |WARN |ERROR) \S/);
    expect(res.body).toContain("INFO  Deploying Logs build 1 to Integration (Integration).\n");
    expect(res.body).toContain("INFO  copying build 1\n");
    expect(res.body).toContain("WARN  disk almost full\n");
    expect(res.body).toContain("ERROR no space left on device\n");
    // The same text as the execution page's log: one log, two addresses.
    const page = f.ok<{ log: string }>(
      await f.json("GET", `/applications/${String(failed.applicationId)}/executions/${String(failed.id)}`),
    );
    expect(res.body).toBe(page.log);
    // Without a level: everything, as level=0.
    expect((await logs(`executionId=${String(failed.id)}`)).body).toBe(res.body);
  });

  it("keeps entries at or above the level: 10 info, 20 warning, 30 error", async () => {
    const at = async (level: number) => (await logs(`executionId=${String(failed.id)}&level=${level}`)).body;
    const all = await at(0);
    expect(await at(10)).toBe(
      all
        .split(/(?<=\n)/)
        .filter((l) => !/ DEBUG /.test(l))
        .join(""),
    );
    const warnings = await at(20);
    expect(
      warnings
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split(" ")[1]),
    ).toEqual(expect.arrayContaining(["WARN", "ERROR"]));
    expect(warnings).not.toMatch(/ INFO /);
    expect(warnings).toContain("WARN  disk almost full\n");
    const errors = await at(30);
    expect(errors).toContain("ERROR no space left on device\n");
    expect(errors).not.toMatch(/ (INFO|WARN) /);
    expect(await at(40)).toBe("");
  });

  it("takes an API key too, and names are case-insensitive", async () => {
    const res = await logs(`ExecutionId=${String(failed.id)}&Level=30`, { "x-apikey": t.adminKey });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("ERROR no space left on device");
  });

  it("404 for an unknown execution, 400 for a missing or malformed id or level", async () => {
    const unknown = await logs("executionId=999999&level=0");
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toBe("The execution was not found.");
    const missing = await logs("level=0");
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toBe("The parameter 'executionId' is required.");
    for (const query of ["executionId=abc", `executionId=${String(failed.id)}&level=high`, "executionId=-1"]) {
      const bad = await logs(query);
      expect(bad.statusCode, query).toBe(400);
      expect(bad.body).toMatch(/^The parameter '(executionId|level)' must be a whole number\.$/);
    }
  });

  it("is refused like the releases area's reads: a user without Applications_View, a wrong password, no one", async () => {
    const query = `executionId=${String(failed.id)}&level=0`;
    const stranger = await logs(query, basic("stranger", USER.password));
    expect(stranger.statusCode).toBe(403);
    expect(stranger.body).toBe("The specified API key does not have the proper permissions to perform this action.");
    expect(stranger.body).not.toContain("no space left");
    const wrong = await logs(query, basic(USER.name, "nope"));
    expect([401, 403]).toContain(wrong.statusCode);
    expect(wrong.body).not.toContain("no space left");
    const anonymous = await logs(query, {});
    expect(anonymous.statusCode).toBe(403);
    expect(anonymous.body).not.toContain("no space left");
  });
});
