import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * Native API, BuildMaster reads (docs/compat.md 7.7; issue 14 section 1): releases, builds,
 * pipelines, environments and deployments, for what `/api/releases/...` made, in BuildMaster's
 * PascalCase columns; empty tables for unknown ids.
 */
let t: TestApp;
let r: ReleasesFixtures;
let nativeKey: string;
let webId: number;
let apiId: number;
let buildId: number;
type Row = Record<string, unknown>;

const call = (method: string, query = "", key = nativeKey) =>
  t.app.inject({ method: "GET", url: `/api/json/${method}?API_Key=${key}${query}` });
const rows = async (method: string, query = "") => {
  const res = await call(method, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Row[]>();
};

beforeAll(async () => {
  t = await buildTestApp();
  r = releasesFixtures(t);
  nativeKey = await createSystemKey(t.database, ["native"]);
  webId = await r.setup("Web");
  apiId = await r.setup("Api");
  await r.release(webId, "1.0", "Web-pipeline");
  await r.release(webId, "2.0", "Web-pipeline");
  await r.release(apiId, "5.0", "Api-pipeline");
  r.ok(await r.json("POST", "/api/releases/cancel", { applicationId: webId, releaseNumber: "1.0" }));
  const build = r.ok<Row>(
    await r.json("POST", "/api/releases/builds/create", { applicationId: webId, releaseNumber: "2.0" }),
  );
  buildId = Number(build.id);
  r.ok(await r.json("POST", "/api/releases/builds/create", { applicationId: webId, releaseNumber: "2.0" }));
});
afterAll(async () => t.close());

describe("Releases_GetReleases", () => {
  it("every release, or one application's, filtered by status name", async () => {
    const all = await rows("Releases_GetReleases");
    expect(all.map((x) => `${String(x.Application_Name)} ${String(x.Release_Number)}`).sort()).toEqual([
      "Api 5.0",
      "Web 1.0",
      "Web 2.0",
    ]);
    const web = await rows("Releases_GetReleases", `&Application_Id=${webId}`);
    expect(web.map((x) => x.Release_Number).sort()).toEqual(["1.0", "2.0"]);
    const canceled = await rows("Releases_GetReleases", `&Application_Id=${webId}&ReleaseStatus_Name=Cancelled`);
    expect(canceled).toMatchObject([{ Release_Number: "1.0", ReleaseStatus_Name: "Canceled" }]);
    expect(await rows("Releases_GetReleases", "&Application_Id=99999")).toEqual([]);
    const bad = await call("Releases_GetReleases", "&ReleaseStatus_Name=Lost");
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("'ReleaseStatus_Name'");
  });
});

describe("Builds_GetBuilds and Builds_GetBuild", () => {
  it("builds of a release, newest first, in Builds_Extended columns", async () => {
    const builds = await rows("Builds_GetBuilds", `&Application_Id=${webId}&Release_Number=2.0`);
    expect(builds.map((b) => b.Build_Number)).toEqual(["2", "1"]);
    expect(builds[1]).toMatchObject({
      Build_Id: buildId,
      Application_Id: webId,
      Application_Name: "Web",
      Release_Number: "2.0",
      Pipeline_Name: "Web-pipeline",
      // The pipeline rejects older builds: the second build's creation rejected the first.
      BuildStatus_Name: "Rejected",
      RejectedBy_User_Name: expect.any(String),
      RejectedOn_Date: expect.any(String),
      CreatedBy_User_Name: "API",
      CreatedOn_Date: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(builds[0]?.BuildStatus_Name).toBe("Active");
    expect(await rows("Builds_GetBuilds", `&Application_Id=${webId}&Build_Count=1`)).toHaveLength(1);
    expect(await rows("Builds_GetBuilds", `&Application_Id=${apiId}`)).toEqual([]);
  });

  it("one build with its deployments (creating it queued the first stage); unknown: empty tables", async () => {
    const res = await call("Builds_GetBuild", `&Build_Id=${buildId}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ Builds_Extended: Row[]; Deployments_Extended: Row[] }>();
    expect(body.Builds_Extended).toMatchObject([{ Build_Id: buildId, Build_Number: "1" }]);
    expect(body.Deployments_Extended[0]).toMatchObject({
      Build_Id: buildId,
      PipelineStage_Name: "Integration",
      Environment_Name: "Integration",
      Forced_Indicator: false,
    });
    expect(body.Deployments_Extended[0]).not.toHaveProperty("log");
    const unknown = await call("Builds_GetBuild", "&Build_Id=99999");
    expect(unknown.json()).toEqual({ Builds_Extended: [], Deployments_Extended: [] });
    const missing = await call("Builds_GetBuild");
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("'Build_Id'");
  });
});

describe("Pipelines_GetPipelines, Environments_GetEnvironments, Deployments_GetDeployments", () => {
  it("pipelines with their stages in order", async () => {
    const res = await call("Pipelines_GetPipelines");
    const body = res.json<{ Pipelines: Row[]; PipelineStages: Row[] }>();
    expect(body.Pipelines.map((p) => [p.Pipeline_Name, p.Stage_Count])).toEqual([
      ["Api-pipeline", 3],
      ["Web-pipeline", 3],
    ]);
    const webPipeline = body.Pipelines.find((p) => p.Pipeline_Name === "Web-pipeline");
    const stages = body.PipelineStages.filter((s) => s.Pipeline_Id === webPipeline?.Pipeline_Id);
    expect(stages.map((s) => [s.Stage_Sequence, s.PipelineStage_Name, s.Environment_Name])).toEqual([
      [1, "Integration", "Integration"],
      [2, "Testing", "Testing"],
      [3, "Production", "Production"],
    ]);
  });

  it("environments by name", async () => {
    const environments = await rows("Environments_GetEnvironments");
    expect(environments.map((e) => e.Environment_Name)).toEqual(["Integration", "Production", "Testing"]);
    expect(environments[0]).toEqual({
      Environment_Id: expect.any(Number),
      Environment_Name: "Integration",
      Active_Indicator: true,
    });
  });

  it("deployments filtered by application, release, build and environment", async () => {
    const web = await rows("Deployments_GetDeployments", `&Application_Id=${webId}&Release_Number=2.0`);
    expect(web.length).toBeGreaterThanOrEqual(2);
    for (const d of web) expect(d).toMatchObject({ Application_Name: "Web", Release_Number: "2.0" });
    const one = await rows("Deployments_GetDeployments", `&Build_Id=${buildId}`);
    expect(one.every((d) => d.Build_Id === buildId)).toBe(true);
    expect(await rows("Deployments_GetDeployments", "&Environment_Name=Production")).toEqual([]);
    expect(await rows("Deployments_GetDeployments", "&Build_Id=99999")).toEqual([]);
    expect(await rows("Deployments_GetDeployments", `&Application_Id=${webId}&Deployment_Count=1`)).toHaveLength(1);
  });
});

describe("privileges", () => {
  it("a releases-only key is 403 with the seed's sentence", async () => {
    const releasesKey = await createSystemKey(t.database, ["releases"]);
    for (const method of ["Releases_GetReleases", "Builds_GetBuilds", "Environments_GetEnvironments"]) {
      const res = await call(method, "", releasesKey);
      expect(res.statusCode).toBe(403);
      expect(res.body).toBe(PERMISSION_DENIED_MESSAGE);
    }
  });
});
