import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/** State rules of docs/compat.md 7.4, legacy aliases, duplicate inputs and scopes (docs/compat.md 7.1, 7.2). */
let t: TestApp;
let f: ReleasesFixtures;
type Json = Record<string, unknown>;

beforeAll(async () => {
  // Deployments are driven by hand here (startDeployment/completeDeployment): no runner.
  t = await buildTestApp({ env: { WHARF_DEPLOY_CONCURRENCY: "0" } });
  f = releasesFixtures(t);
  await f.setup("Rules");
  await f.setup("Keepers", { rejectOlderBuilds: false });
});
afterAll(async () => t.close());

async function createRelease(app: string, number: string): Promise<Json> {
  return f.ok<Json>(
    await f.json("POST", "/api/releases/create", {
      applicationName: app,
      releaseNumber: number,
      pipelineName: `${app}-pipeline`,
    }),
  );
}
async function createBuild(app: string, number: string): Promise<Json> {
  return f.ok<Json>(
    await f.json("POST", "/api/releases/builds/create", { applicationName: app, releaseNumber: number }),
  );
}
async function deployments(query: string): Promise<Json[]> {
  return f.ok<Json[]>(await f.json("GET", `/api/releases/builds/deployments?${query}`));
}
async function succeed(id: number): Promise<void> {
  await f.services.releases.completeDeployment(id, "succeeded", "ok");
}

describe("state rules (docs/compat.md 7.4)", () => {
  it("walks a build through every stage; the final success deploys build and release", async () => {
    await createRelease("Rules", "1.0");
    const build = await createBuild("Rules", "1.0");
    const [first] = await deployments(`applicationName=Rules&releaseNumber=1.0&buildNumber=${build.number}`);
    expect(first).toMatchObject({ pipelineStageName: "Integration", status: "pending" });
    const refused = await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id, toStage: "Production" });
    expect(refused.statusCode).toBe(409);
    await succeed(first?.id as number);
    for (const stage of ["Testing", "Production"]) {
      const [next] = f.ok<Json[]>(await f.json("PUT", "/api/releases/builds/deploy", { buildId: build.id }));
      expect(next).toMatchObject({ pipelineStageName: stage, status: "pending" });
      await succeed(next?.id as number);
    }
    const [done] = f.ok<Json[]>(await f.json("GET", `/api/releases/builds?buildId=${build.id}`));
    expect(done).toMatchObject({ status: "deployed", furthestStage: "Production" });
    const [rel] = f.ok<Json[]>(await f.json("GET", "/api/releases?applicationName=Rules&releaseNumber=1.0"));
    expect(rel).toMatchObject({ status: "deployed", furthestBuildId: build.id, furthestPackageNumber: build.number });
    const again = await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id });
    expect(again.statusCode).toBe(409);
    await expect(f.services.releases.completeDeployment(first?.id as number, "failed", "")).rejects.toMatchObject({
      kind: "conflict",
    });
  });

  it("a failure in the final stage deploys nothing; warned counts as success", async () => {
    await createRelease("Rules", "1.5");
    const build = await createBuild("Rules", "1.5");
    const [d] = f.ok<Json[]>(
      await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id, toStage: "Production", force: "True" }),
    );
    await f.services.releases.completeDeployment(d?.id as number, "failed", "boom");
    expect((await f.services.releases.listBuilds({ buildId: build.id as number }))[0]?.status).toBe("active");
    const [d2] = f.ok<Json[]>(
      await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id, toStage: "Production", force: true }),
    );
    await f.services.releases.completeDeployment(d2?.id as number, "warned", "careful");
    expect((await f.services.releases.listBuilds({ buildId: build.id as number }))[0]?.status).toBe("deployed");
  });

  it("a newer build entering a stage rejects the older one, unless the pipeline says not to", async () => {
    await createRelease("Rules", "2.0");
    const older = await createBuild("Rules", "2.0");
    const newer = await createBuild("Rules", "2.0");
    expect(newer.number).toBe("2");
    const builds = f.ok<Json[]>(await f.json("GET", "/api/releases/builds?applicationName=Rules&releaseNumber=2.0"));
    expect(builds.map((b) => [b.number, b.status])).toEqual([
      ["2", "active"],
      ["1", "rejected"],
    ]);
    expect(builds[1]).toMatchObject({ rejectedBy: "SYSTEM" });
    const [canceled] = await deployments(`applicationName=Rules&releaseNumber=2.0&buildNumber=1`);
    expect(canceled).toMatchObject({ status: "failed", canceledBy: "SYSTEM" });
    expect(older.id).not.toBe(newer.id);

    await createRelease("Keepers", "1.0");
    await createBuild("Keepers", "1.0");
    await createBuild("Keepers", "1.0");
    const kept = f.ok<Json[]>(await f.json("GET", "/api/releases/builds?applicationName=Keepers&status=active"));
    expect(kept).toHaveLength(2);
  });

  it("rejecting a build cancels its pending deployments; a rejected build cannot be deployed", async () => {
    await createRelease("Rules", "3.0");
    const build = await createBuild("Rules", "3.0");
    const rejected = f.ok<Json>(await f.json("DELETE", `/api/releases/builds/reject?buildId=${build.id}`));
    expect(rejected).toMatchObject({ status: "rejected", rejectedBy: "API" });
    const [d] = await deployments(`buildId=${build.id}`);
    expect(d).toMatchObject({ status: "failed", canceledBy: "API" });
    expect((await f.services.releases.pendingDeployments(100)).some((p) => p.buildId === build.id)).toBe(false);
    expect((await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id })).statusCode).toBe(409);
    expect((await f.json("POST", "/api/releases/builds/reject", { buildId: build.id })).statusCode).toBe(409);
  });

  it("cancel rejects the release's builds; restore reactivates the release", async () => {
    await createRelease("Rules", "4.0");
    await createBuild("Rules", "4.0");
    const both = await f.json("POST", "/api/releases/cancel", { releaseId: 1, applicationName: "Rules" });
    expect(both.statusCode).toBe(400);
    const canceled = f.ok<Json>(
      await f.json("PUT", "/api/releases/cancel", { applicationName: "Rules", releaseNumber: "4.0", reason: "no" }),
    );
    expect(canceled).toMatchObject({ status: "canceled", canceledBy: "API" });
    const builds = f.ok<Json[]>(await f.json("GET", "/api/releases/builds?applicationName=Rules&releaseNumber=4.0"));
    expect(builds.map((b) => b.status)).toEqual(["rejected"]);
    expect(
      (await f.json("POST", "/api/releases/builds/create", { applicationName: "Rules", releaseNumber: "4.0" }))
        .statusCode,
    ).toBe(409);
    const restored = f.ok<Json>(await f.json("POST", "/api/releases/restore", { releaseId: canceled.id }));
    expect(restored).toMatchObject({ status: "active" });
    expect(restored).not.toHaveProperty("canceledBy");
    expect((await f.json("POST", "/api/releases/restore", { releaseId: canceled.id })).statusCode).toBe(409);
    expect((await createBuild("Rules", "4.0")).status).toBe("active");
  });
});

describe("inputs and aliases (docs/compat.md 7.1, 7.2)", () => {
  it("refuses a name given in both the query and the body, and ignores empty values", async () => {
    const twice = await t.app.inject({
      method: "POST",
      url: "/api/releases?applicationName=Rules",
      headers: { "x-apikey": t.adminKey, "content-type": "application/x-www-form-urlencoded" },
      payload: "applicationName=Rules",
    });
    expect(twice.statusCode).toBe(400);
    expect(twice.headers["content-type"]).toBe("text/plain");
    expect(twice.body).toContain("more than once");
    const empty = f.ok<Json[]>(await f.json("GET", "/api/releases?applicationName=Rules&releaseNumber=&status="));
    expect(empty.length).toBeGreaterThan(1);
    expect((await f.json("GET", "/api/releases?status=bogus")).statusCode).toBe(400);
    const badVar = await f.json("POST", "/api/releases/builds/create", {
      applicationName: "Rules",
      releaseNumber: "4.0",
      $1bad: "x",
    });
    expect(badVar.statusCode).toBe(400);
  });

  it("serves the BuildMaster 5 packages aliases with query strings and empty text/plain PUTs", async () => {
    await createRelease("Rules", "5.0");
    const put = (url: string, method: "PUT" | "DELETE" = "PUT") =>
      t.app.inject({
        method,
        url: `${url}&key=${encodeURIComponent(t.adminKey)}`,
        headers: { "content-type": "text/plain" },
        payload: "",
      });
    const build = f.ok<Json>(
      await put("/api/releases/packages/create?applicationName=Rules&releaseNumber=5.0&packageNumber=7"),
    );
    expect(build).toMatchObject({ number: "7", packageNumber: "7" });
    const listed = f.ok<Json[]>(
      await f.json("GET", "/api/releases/packages?applicationName=Rules&releaseNumber=5.0&packageNumber=7"),
    );
    expect(listed.map((b) => b.id)).toEqual([build.id]);
    expect(
      (await put(`/api/releases/packages/deploy?packageId=${build.id}&toStage=Testing&force=false`)).statusCode,
    ).toBe(409);
    const deployed = f.ok<Json[]>(
      await put(`/api/releases/packages/deploy?packageId=${build.id}&toStage=Testing&force=true`),
    );
    expect(deployed).toMatchObject([{ pipelineStageName: "Testing", packageId: build.id, packageNumber: "7" }]);
    const listedDeployments = f.ok<Json[]>(
      await f.json(
        "GET",
        `/api/releases/packages/deployments?packageId=${build.id}&pipelineStageName=testing&environmentName=Testing&status=pending`,
      ),
    );
    expect(listedDeployments.map((d) => d.id)).toEqual([deployed[0]?.id]);
    const both = await f.json("GET", `/api/releases/packages/deployments?packageId=${build.id}&buildId=${build.id}`);
    expect(both.statusCode).toBe(400);
    const rejected = f.ok<Json>(await put(`/api/releases/packages/reject?packageId=${build.id}`, "DELETE"));
    expect(rejected).toMatchObject({ status: "rejected" });
  });
});

describe("scopes", () => {
  it("needs the releases scope", async () => {
    const feedsOnly = await createSystemKey(t.database, ["feeds"]);
    const res = await f.json("GET", "/api/releases", undefined, feedsOnly);
    expect(res.statusCode).toBe(403);
    const scoped = await createSystemKey(t.database, ["releases"]);
    expect((await f.json("GET", "/api/releases", undefined, scoped)).statusCode).toBe(200);
  });
});
