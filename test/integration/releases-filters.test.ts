import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * The filters of the three list operations and the inputs without a test elsewhere (docs/compat.md 7.2):
 * releases by name, pipeline and status; create-from-template; builds by stage, status, pipeline,
 * release name and id; deployments by stage, environment, status, pipeline and id; deploy with a
 * startTime; and the CI badge key in the X-ApiKey header or a JSON body (docs/compat.md 7.1, 7.6).
 */
let t: TestApp;
let f: ReleasesFixtures;
type Json = Record<string, unknown>;
const ids: Record<string, number> = {};
let keepId: number;
let filtersId: number;

async function release(app: string, number: string, pipelineName: string, releaseName?: string): Promise<Json> {
  const body = { applicationName: app, releaseNumber: number, pipelineName, ...(releaseName && { releaseName }) };
  return f.ok<Json>(await f.json("POST", "/api/releases/create", body));
}
/** A new build and the id of the pending deployment to the first stage that creating it queued. */
async function build(app: string, number: string): Promise<[number, number]> {
  const b = f.ok<Json>(
    await f.json("POST", "/api/releases/builds/create", { applicationName: app, releaseNumber: number }),
  );
  const first = await f.services.releases.latestDeploymentOf(b.id as number);
  return [b.id as number, first?.id as number];
}
async function deploy(body: Json): Promise<number> {
  const created = f.ok<Json[]>(await f.json("POST", "/api/releases/builds/deploy", body));
  expect(created).toHaveLength(1);
  return created[0]?.id as number;
}
const finish = (id: number, status: "succeeded" | "warned" | "failed") =>
  f.services.releases.completeDeployment(id, status, status);
async function list(path: string, query: string): Promise<number[]> {
  return f.ok<Json[]>(await f.json("GET", `${path}?${query}`)).map((x) => x.id as number);
}

beforeAll(async () => {
  // Deployments stay as the test sets them (startDeployment/completeDeployment): no runner.
  t = await buildTestApp({ env: { WHARF_DEPLOY_CONCURRENCY: "0" } });
  f = releasesFixtures(t);
  filtersId = await f.setup("Filters");
  await f.setup("Other");
  keepId = await f.setup("Keep", { rejectOlderBuilds: false });
  const plan = [{ type: "log", message: "alt" }];
  const stages = [
    { name: "Build", environmentName: "Integration", plan },
    { name: "Ship", environmentName: "Production", plan },
  ];
  f.ok(await f.json("POST", "/api/pipelines/create", { name: "Alt", stages }));

  // Filters: r1 active (b1 in Integration), r2 deployed (b2 through Build and Ship), r3 canceled
  // (b3 rejected), r4 active (b4 pending in Testing). Other: o1 with ob1 in Integration.
  ids.r1 = (await release("Filters", "1.0", "Filters-pipeline", "Alpha")).id as number;
  ids.r2 = (await release("Filters", "2.0", "Alt", "Beta")).id as number;
  ids.r3 = (await release("Filters", "3.0", "Alt")).id as number;
  ids.r4 = (await release("Filters", "4.0", "Filters-pipeline")).id as number;
  ids.o1 = (await release("Other", "1.0", "Other-pipeline", "Alpha")).id as number;
  [ids.b1] = await build("Filters", "1.0");
  [ids.b2, ids.b2Build] = (await build("Filters", "2.0")) as [number, number];
  await finish(ids.b2Build, "succeeded");
  ids.b2Ship = await deploy({ buildId: ids.b2 });
  await finish(ids.b2Ship, "succeeded");
  [ids.b3, ids.b3Build] = (await build("Filters", "3.0")) as [number, number];
  f.ok(await f.json("POST", "/api/releases/cancel", { releaseId: ids.r3 }));
  let b4Integration: number;
  [ids.b4, b4Integration] = await build("Filters", "4.0");
  await finish(b4Integration, "succeeded");
  ids.b4Testing = await deploy({ buildId: ids.b4 });
  [ids.ob1] = await build("Other", "1.0");

  // Keep (older builds kept): d1..d5 in Integration, left pending, executing, succeeded, warned,
  // failed; d6 = k3 to Testing, d7 = k4 forced to Production, both pending.
  await release("Keep", "1.0", "Keep-pipeline");
  for (const n of [1, 2, 3, 4, 5]) [ids[`k${n}`], ids[`d${n}`]] = await build("Keep", "1.0");
  expect(await f.services.releases.startDeployment(ids.d2 as number)).toBe(true);
  await finish(ids.d3 as number, "succeeded");
  await finish(ids.d4 as number, "warned");
  await finish(ids.d5 as number, "failed");
  ids.d6 = await deploy({ buildId: ids.k3 });
  ids.d7 = await deploy({ buildId: ids.k4, toStage: "Production", force: true });
});
afterAll(async () => t.close());

describe("GET/POST /api/releases filters", () => {
  const releases = (query: string) => list("/api/releases", query);

  it("filters by releaseName (the number when none was given), newest first", async () => {
    expect(await releases("applicationName=Filters")).toEqual([ids.r4, ids.r3, ids.r2, ids.r1]);
    expect(await releases("releaseName=alpha")).toEqual([ids.o1, ids.r1]);
    const [alpha, ...more] = f.ok<Json[]>(
      await f.json("POST", "/api/releases", { applicationName: "Filters", releaseName: "ALPHA" }),
    );
    expect(more).toEqual([]);
    expect(alpha).toMatchObject({ id: ids.r1, number: "1.0", name: "Alpha", releaseName: "Alpha" });
    expect(await releases("releaseName=3.0")).toEqual([ids.r3]);
    expect(await releases("releaseName=Gamma")).toEqual([]);
  });

  it("filters by pipelineName, alone and with other filters", async () => {
    expect(await releases("pipelineName=alt")).toEqual([ids.r3, ids.r2]);
    expect(await releases("pipelineName=Filters-pipeline")).toEqual([ids.r4, ids.r1]);
    const form = await f.form("POST", "/api/releases", [
      ["key", t.adminKey],
      ["pipelineName", "Other-pipeline"],
    ]);
    expect(f.ok<Json[]>(form).map((r) => [r.id, r.pipelineName])).toEqual([[ids.o1, "Other-pipeline"]]);
    expect(await releases("pipelineName=Alt&releaseName=Beta")).toEqual([ids.r2]);
    expect(await releases("pipelineName=Alt&releaseName=Alpha")).toEqual([]);
    expect(await releases("pipelineName=Nope")).toEqual([]);
  });

  it("filters by status active, canceled or deployed; another status is 400", async () => {
    expect(await releases("applicationName=Filters&status=active")).toEqual([ids.r4, ids.r1]);
    expect(await releases("applicationName=Filters&status=canceled")).toEqual([ids.r3]);
    const deployed = f.ok<Json[]>(
      await f.json("POST", "/api/releases", { applicationName: "Filters", status: "Deployed" }),
    );
    expect(deployed.map((r) => [r.id, r.status, r.furthestBuildId])).toEqual([[ids.r2, "deployed", ids.b2]]);
    for (const status of ["rejected", "pending"]) {
      const bad = await f.json("GET", `/api/releases?status=${status}`);
      expect(bad.statusCode).toBe(400);
      expect(bad.body).toBe("'status' must be one of: active, deployed, canceled.");
    }
  });
});

describe("POST/PUT /api/releases/create-from-template", () => {
  it("creates a release with its template, pipeline optional; template is required", async () => {
    const url = "/api/releases/create-from-template";
    const plain = f.ok<Json>(
      await f.json("POST", url, { applicationName: "Other", releaseNumber: "T1", template: "Std" }),
    );
    expect(plain).toMatchObject({ number: "T1", name: "T1", template: "Std", status: "active", sequence: 2 });
    expect(plain).not.toHaveProperty("pipelineName");
    const named = f.ok<Json>(
      await f.form("PUT", url, [
        ["key", t.adminKey],
        ["applicationName", "Other"],
        ["releaseNumber", "T2"],
        ["releaseName", "Templated"],
        ["pipelineName", "Other-pipeline"],
        ["template", "Std"],
      ]),
    );
    expect(named).toMatchObject({ number: "T2", name: "Templated", template: "Std", pipelineName: "Other-pipeline" });
    for (const method of ["POST", "PUT"] as const) {
      const missing = await f.json(method, url, { applicationName: "Other", releaseNumber: "T3", template: "" });
      expect(missing.statusCode).toBe(400);
      expect(missing.body).toBe("The parameter 'template' is required.");
    }
    expect(await list("/api/releases", "applicationName=Other")).toEqual([named.id, plain.id, ids.o1]);
    expect(await list("/api/releases", "releaseName=T3")).toEqual([]);
  });
});

describe("GET/POST /api/releases/builds filters", () => {
  const builds = (query: string) => list("/api/releases/builds", query);

  it("filters by furthestStage, case-insensitively", async () => {
    expect(await builds("furthestStage=integration")).toEqual([ids.k5, ids.k2, ids.k1, ids.ob1, ids.b1]);
    expect(await builds("furthestStage=Integration&applicationName=Filters")).toEqual([ids.b1]);
    expect(await builds("furthestStage=Testing&applicationName=Filters")).toEqual([ids.b4]);
    expect(await builds("furthestStage=Ship")).toEqual([ids.b2]);
    expect(await builds("furthestStage=Build")).toEqual([ids.b3]);
    expect(await builds("furthestStage=Nowhere")).toEqual([]);
  });

  it("filters by status active, rejected or deployed; another status is 400", async () => {
    expect(await builds("applicationName=Filters&status=active")).toEqual([ids.b4, ids.b1]);
    const rejected = f.ok<Json[]>(
      await f.json("POST", "/api/releases/builds", { applicationName: "Filters", status: "rejected" }),
    );
    expect(rejected.map((b) => [b.id, b.status, b.rejectedBy])).toEqual([[ids.b3, "rejected", "API"]]);
    expect(await builds("applicationName=Filters&status=DEPLOYED")).toEqual([ids.b2]);
    const bad = await f.json("GET", "/api/releases/builds?status=canceled");
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toBe("'status' must be one of: active, deployed, rejected.");
  });

  it("filters by pipelineName, releaseName and buildId", async () => {
    const alt = f.ok<Json[]>(await f.json("GET", "/api/releases/builds?pipelineName=ALT"));
    expect(alt.map((b) => [b.id, b.pipelineName, b.releaseNumber])).toEqual([
      [ids.b3, "Alt", "3.0"],
      [ids.b2, "Alt", "2.0"],
    ]);
    expect(await builds("pipelineName=Other-pipeline")).toEqual([ids.ob1]);
    expect(await builds("releaseName=Alpha")).toEqual([ids.ob1, ids.b1]);
    expect(await builds("releaseName=alpha&applicationName=Filters")).toEqual([ids.b1]);
    expect(await builds("releaseName=Beta&pipelineName=Filters-pipeline")).toEqual([]);
    const [one, ...rest] = f.ok<Json[]>(await f.json("POST", "/api/releases/builds", { buildId: String(ids.b2) }));
    expect(rest).toEqual([]);
    expect(one).toMatchObject({
      id: ids.b2,
      number: "1",
      status: "deployed",
      furthestStage: "Ship",
      releaseName: "Beta",
    });
    expect(await builds(`buildId=${ids.b2}&applicationName=Other`)).toEqual([]);
    expect(await builds("buildId=999999")).toEqual([]);
    expect((await f.json("GET", "/api/releases/builds?buildId=two")).statusCode).toBe(400);
  });
});

describe("GET/POST /api/releases/builds/deployments filters", () => {
  const deployments = (query: string) => list("/api/releases/builds/deployments", query);
  const keep = "applicationName=Keep";

  it("filters by pipelineStageName and pipelineName, newest first", async () => {
    const all = [ids.d7, ids.d6, ids.d5, ids.d4, ids.d3, ids.d2, ids.d1];
    expect(await deployments(`pipelineName=keep-PIPELINE`)).toEqual(all);
    expect(await deployments(`${keep}&pipelineStageName=integration`)).toEqual(all.slice(2));
    expect(await deployments(`${keep}&pipelineStageName=Testing`)).toEqual([ids.d6]);
    expect(await deployments("pipelineName=Alt")).toEqual([ids.b3Build, ids.b2Ship, ids.b2Build]);
    expect(await deployments("pipelineName=Alt&pipelineStageName=Ship")).toEqual([ids.b2Ship]);
    expect(await deployments("pipelineStageName=Nowhere")).toEqual([]);
  });

  it("filters by environmentId and environmentName", async () => {
    const [d6] = f.ok<Json[]>(await f.json("GET", `/api/releases/builds/deployments?deploymentId=${ids.d6}`));
    const [d1] = f.ok<Json[]>(await f.json("GET", `/api/releases/builds/deployments?deploymentId=${ids.d1}`));
    expect(d6).toMatchObject({ environmentName: "Testing", pipelineStageName: "Testing", buildId: ids.k3 });
    expect(d1?.environmentId).not.toBe(d6?.environmentId);
    expect(await deployments(`${keep}&environmentId=${d1?.environmentId}`)).toEqual([
      ids.d5,
      ids.d4,
      ids.d3,
      ids.d2,
      ids.d1,
    ]);
    expect(await deployments(`environmentId=${d6?.environmentId}`)).toEqual([ids.d6, ids.b4Testing]);
    const production = f.ok<Json[]>(
      await f.json("POST", "/api/releases/builds/deployments", { environmentName: "PRODUCTION" }),
    );
    expect(production.map((d) => [d.id, d.pipelineStageName])).toEqual([
      [ids.d7, "Production"],
      [ids.b2Ship, "Ship"],
    ]);
    expect(await deployments(`environmentId=${d6?.environmentId}&environmentName=Production`)).toEqual([]);
    expect((await f.json("GET", "/api/releases/builds/deployments?environmentId=Testing")).statusCode).toBe(400);
  });

  it("filters by status pending, executing, succeeded, warned or failed; another status is 400", async () => {
    expect(await deployments(`${keep}&status=pending`)).toEqual([ids.d7, ids.d6, ids.d1]);
    expect(await deployments(`${keep}&status=executing`)).toEqual([ids.d2]);
    expect(await deployments(`${keep}&status=Succeeded`)).toEqual([ids.d3]);
    expect(await deployments(`${keep}&status=warned`)).toEqual([ids.d4]);
    expect(await deployments(`${keep}&status=failed`)).toEqual([ids.d5]);
    expect(await deployments(`${keep}&status=pending&pipelineStageName=Testing`)).toEqual([ids.d6]);
    const canceled = f.ok<Json[]>(
      await f.json("GET", "/api/releases/builds/deployments?pipelineName=Alt&status=failed"),
    );
    expect(canceled.map((d) => [d.id, d.canceledBy])).toEqual([[ids.b3Build, "API"]]);
    const bad = await f.json("GET", "/api/releases/builds/deployments?status=canceled");
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toBe("'status' must be one of: pending, executing, succeeded, warned, failed.");
  });

  it("filters by deploymentId", async () => {
    const [d4, ...rest] = f.ok<Json[]>(
      await f.json("POST", "/api/releases/builds/deployments", { deploymentId: ids.d4 }),
    );
    expect(rest).toEqual([]);
    expect(d4).toMatchObject({ id: ids.d4, status: "warned", buildId: ids.k4, pipelineStageName: "Integration" });
    expect(await deployments(`deploymentId=${ids.d4}&status=pending`)).toEqual([]);
    expect(await deployments("deploymentId=999999")).toEqual([]);
    expect((await f.json("GET", "/api/releases/builds/deployments?deploymentId=-1")).statusCode).toBe(400);
  });
});

describe("deploy with startTime", () => {
  it("records a future start time and leaves the deployment pending; a malformed one is 400", async () => {
    const before = await list("/api/releases/builds/deployments", `buildId=${ids.ob1}`);
    const bad = await f.json("POST", "/api/releases/builds/deploy", { buildId: ids.ob1, startTime: "next tuesday" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toBe("'startTime' must be a date and time.");
    expect(await list("/api/releases/builds/deployments", `buildId=${ids.ob1}`)).toEqual(before);

    const later = new Date(Date.now() + 24 * 3600_000);
    later.setUTCMilliseconds(0);
    const at = later.toISOString().replace(".000Z", "Z");
    const [created] = f.ok<Json[]>(
      await f.json("PUT", "/api/releases/builds/deploy", {
        buildId: ids.ob1,
        toStage: "Testing",
        force: "true",
        startTime: at,
      }),
    );
    expect(created).toMatchObject({ buildId: ids.ob1, status: "pending", pipelineStageName: "Testing" });
    expect(created).not.toHaveProperty("started");
    const id = created?.id as number;
    expect(await list("/api/releases/builds/deployments", `buildId=${ids.ob1}`)).toEqual([id, ...before]);
    expect((await f.services.releases.findDeployment(id))?.startAfter).toBe(later.toISOString());
    const due = (await f.services.releases.pendingDeployments(100)).map((d) => d.id);
    expect(due).toContain(before[0]);
    expect(due).not.toContain(id);
  });
});

describe("CI badges: key transports (docs/compat.md 7.1, 7.6)", () => {
  const title = (svg: string) => /<title>([^<]*)<\/title>/.exec(svg)?.[1];

  it("takes the key from the X-ApiKey header", async () => {
    const key = await createSystemKey(t.database, ["ci-badges"]);
    const url = "/api/ci-badges/image?$ApplicationName=Filters&$ReleaseNumber=2.0";
    const res = await t.app.inject({ method: "GET", url, headers: { "x-apikey": key } });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("image/svg+xml");
    expect(title(res.body)).toBe("success");
    const other = await createSystemKey(t.database, ["feeds"]);
    expect((await t.app.inject({ method: "GET", url, headers: { "x-apikey": other } })).statusCode).toBe(403);
    expect((await t.app.inject({ method: "GET", url, headers: { "x-apikey": "nope" } })).statusCode).toBe(403);
  });

  it("takes API_Key and $ filters from a JSON body", async () => {
    const key = await createSystemKey(t.database, ["ci-badges"]);
    const post = (body: Json) =>
      t.app.inject({
        method: "POST",
        url: "/api/ci-badges/image",
        headers: { "content-type": "application/json" },
        payload: JSON.stringify(body),
      });
    // Keep's newest build is k5 (its deployment failed); Filters' is b4 (pending in Testing).
    const keep = await post({ API_Key: key, $ApplicationId: String(keepId) });
    expect(keep.statusCode, keep.body).toBe(200);
    expect(keep.headers["content-type"]).toBe("image/svg+xml");
    expect(title(keep.body)).toBe("error");
    const filters = await post({ API_Key: key, $ApplicationId: filtersId });
    expect(title(filters.body)).toBe("pending");
    const built = await post({ API_Key: key, $ApplicationName: "Filters", $ReleaseNumber: "2.0" });
    expect(title(built.body)).toBe("success");
    expect((await post({ API_Key: "nope", $ApplicationId: String(keepId) })).statusCode).toBe(403);
    expect((await post({ $ApplicationId: String(keepId) })).statusCode).toBe(403);
  });
});
