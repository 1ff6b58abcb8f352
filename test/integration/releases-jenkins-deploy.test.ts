import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Clock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * The Jenkins BuildMaster plugin's "deploy to first stage" (docs/clients.md 3.8; JBM BuildHelper.createBuild
 * and BuildMasterApi.deployBuildToStage): PUT builds/create, then wait for every pending or executing
 * deployment of the release to end, then PUT builds/deploy with key, applicationId, releaseNumber and
 * buildNumber only, then follow the deployments answered. Creating the build already queued the
 * first-stage deployment: the plugin must get that one back, not a second stage (README rule), while
 * other callers keep "next stage".
 */
type Json = Record<string, unknown>;
const STAGES = ["Integration", "Testing"];

/** A clock the tests move forward to leave the plugin's window. */
let offsetMs = 0;
const clock: Clock = { now: () => new Date(Date.now() + offsetMs) };

async function pipelineApp(f: ReleasesFixtures, name: string, stages: readonly string[]): Promise<number> {
  f.ok(
    await f.json("POST", "/api/pipelines/create", {
      name,
      stages: stages.map((stage) => ({
        name: stage,
        environmentName: stage,
        plan: [{ type: "log", message: `deploying to ${stage}` }],
      })),
    }),
  );
  const app = f.ok<{ id: number }>(await f.json("POST", "/api/applications/create", { name }));
  f.ok(
    await f.json("POST", "/api/releases/create", { applicationId: app.id, releaseNumber: "1.0", pipelineName: name }),
  );
  return app.id;
}

/** The plugin's requests: a form with `key`, and HttpEasy's stray `charset` header (releasesFixtures.form). */
function plugin(t: TestApp, f: ReleasesFixtures, appId: number) {
  const base: Array<[string, string]> = [
    ["key", t.adminKey],
    ["applicationId", String(appId)],
    ["releaseNumber", "1.0"],
  ];
  const deployments = async (pairs: Array<[string, string]>) =>
    f.ok<Json[]>(await f.form("POST", "/api/releases/builds/deployments", [...base, ...pairs]));
  return {
    create: async () =>
      f.ok<Json>(await f.form("PUT", "/api/releases/builds/create", [...base, ["$JenkinsBuild", "42"]])),
    deploy: (buildNumber: string) =>
      f.form("PUT", "/api/releases/builds/deploy", [...base, ["buildNumber", buildNumber]]),
    deployments,
    /** waitForActiveDeploymentsToComplete: pending and executing ones of the release, each polled by id. */
    async waitForActive(buildNumber?: string): Promise<void> {
      const build: Array<[string, string]> = buildNumber === undefined ? [] : [["buildNumber", buildNumber]];
      for (let attempt = 0; attempt < 400; attempt++) {
        const active = [
          ...(await deployments([...build, ["status", "pending"]])),
          ...(await deployments([...build, ["status", "executing"]])),
        ];
        if (active.length === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error("deployments still running");
    },
    /** waitForDeploymentToComplete: polls the deployment by id while null, "", pending or executing. */
    async follow(deployment: Json): Promise<Json> {
      for (let attempt = 0; attempt < 400; attempt++) {
        const [now] = await deployments([
          ["buildNumber", String(deployment.buildNumber)],
          ["deploymentId", String(deployment.id)],
        ]);
        if (now && !["pending", "executing", "", null, undefined].includes(now.status as string)) return now;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`deployment ${String(deployment.id)} never ended`);
    },
  };
}

describe("the plugin's deploy to first stage, deployments running by themselves", () => {
  let t: TestApp;
  let f: ReleasesFixtures;
  beforeAll(async () => {
    t = await buildTestApp({ clock });
    f = releasesFixtures(t);
    await f.setup("Environments only");
  });
  afterAll(async () => t.close());

  for (const stages of [STAGES, STAGES.slice(0, 1)]) {
    it(`deploys once to the first stage of a ${stages.length}-stage pipeline and follows that deployment`, async () => {
      const appId = await pipelineApp(f, `Jenkins ${stages.length}`, stages);
      const jenkins = plugin(t, f, appId);
      const build = await jenkins.create();
      expect(build).toMatchObject({ number: "1", status: "active", furthestStage: "Integration" });
      await jenkins.waitForActive();

      const res = await jenkins.deploy("1");
      const answered = f.ok<Json[]>(res);
      expect(answered).toHaveLength(1);
      const [deployment] = answered as [Json];
      // Every field the plugin reads (docs/compat.md 7.3): the automatic deployment, ended.
      expect(deployment).toMatchObject({
        status: "succeeded",
        pipelineStageName: "Integration",
        applicationId: appId,
        releaseNumber: "1.0",
        buildNumber: "1",
      });
      expect(typeof deployment.id).toBe("number");
      const followed = await jenkins.follow(deployment);
      expect(followed).toMatchObject({ id: deployment.id, status: "succeeded" });
      await jenkins.waitForActive("1");

      // One deployment in all, to the first stage; the build went no further.
      const all = await jenkins.deployments([["buildNumber", "1"]]);
      expect(all.map((d) => [d.id, d.pipelineStageName])).toEqual([[deployment.id, "Integration"]]);
      const [after] = f.ok<Json[]>(await f.json("GET", `/api/releases/builds?buildId=${String(build.id)}`));
      expect(after).toMatchObject({
        furthestStage: "Integration",
        status: stages.length === 1 ? "deployed" : "active",
      });
    });
  }

  it("other callers (no plugin header) still deploy to the next stage once the first one ended", async () => {
    const appId = await pipelineApp(f, "Script", STAGES);
    const jenkins = plugin(t, f, appId);
    const build = await jenkins.create();
    await jenkins.waitForActive();
    const next = f.ok<Json[]>(
      await f.json("POST", "/api/releases/builds/deploy", {
        applicationId: appId,
        releaseNumber: "1.0",
        buildNumber: build.number,
      }),
    );
    expect(next).toHaveLength(1);
    expect(next[0]).toMatchObject({ pipelineStageName: "Testing" });
    expect((await jenkins.follow(next[0] as Json)).status).toBe("succeeded");

    // A one-stage pipeline: nothing is after the first stage, as before.
    const oneId = await pipelineApp(f, "Script one", STAGES.slice(0, 1));
    const one = plugin(t, f, oneId);
    const oneBuild = await one.create();
    await one.waitForActive();
    const final = await f.json("POST", "/api/releases/builds/deploy", { buildId: oneBuild.id });
    expect(final.statusCode).toBe(409);
    expect(final.body).toBe(`The build '${String(oneBuild.number)}' was already deployed to the final stage.`);
  });

  it("the plugin's own next-stage deploy, past the window after the first stage ended, goes to the next stage", async () => {
    const appId = await pipelineApp(f, "Jenkins later", STAGES);
    const jenkins = plugin(t, f, appId);
    await jenkins.create();
    await jenkins.waitForActive();
    offsetMs = 61_000;
    try {
      const [next] = f.ok<Json[]>(await jenkins.deploy("1"));
      expect(next).toMatchObject({ pipelineStageName: "Testing" });
      expect((await jenkins.follow(next as Json)).status).toBe("succeeded");
    } finally {
      offsetMs = 0;
    }
  });
});

describe("a bare deploy while the automatic first-stage deployment has not ended (any caller)", () => {
  let t: TestApp;
  let f: ReleasesFixtures;
  let appId: number;
  beforeAll(async () => {
    // Deployments are driven by hand (completeDeployment): no runner.
    t = await buildTestApp({ env: { WHARF_DEPLOY_CONCURRENCY: "0" }, clock });
    f = releasesFixtures(t);
    await f.setup("Environments only");
    appId = await pipelineApp(f, "Pending", STAGES);
  });
  afterAll(async () => t.close());

  const createBuild = async () =>
    f.ok<Json>(await f.json("POST", "/api/releases/builds/create", { applicationId: appId, releaseNumber: "1.0" }));
  const deploymentsOf = async (build: Json) =>
    f.ok<Json[]>(await f.json("GET", `/api/releases/builds/deployments?buildId=${String(build.id)}`));

  it("answers the pending, then the executing, first-stage deployment instead of queuing a second one", async () => {
    const build = await createBuild();
    const [automatic] = (await deploymentsOf(build)) as [Json];
    expect(automatic).toMatchObject({ status: "pending", pipelineStageName: "Integration" });
    for (const viaPlugin of [false, true]) {
      const res = viaPlugin
        ? await plugin(t, f, appId).deploy(String(build.number))
        : await f.json("PUT", "/api/releases/builds/deploy", { buildId: build.id });
      expect(f.ok<Json[]>(res)).toEqual([automatic]);
    }
    expect(await f.services.releases.startDeployment(automatic.id as number, 9)).toBe(true);
    const [executing] = f.ok<Json[]>(await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id }));
    expect(executing).toMatchObject({ id: automatic.id, status: "executing" });
    expect(await deploymentsOf(build)).toHaveLength(1);
  });

  it("creates a deployment as before when the deploy names a stage, forces, sets a start time or variables", async () => {
    for (const extra of [
      { toStage: "Integration" },
      { force: "true" },
      { startTime: new Date(Date.now() + 3600_000).toISOString() },
      { $Reason: "again" },
    ]) {
      const build = await createBuild();
      const [automatic] = (await deploymentsOf(build)) as [Json];
      const [created] = f.ok<Json[]>(
        await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id, ...extra }),
      );
      expect(created?.id, JSON.stringify(extra)).not.toBe(automatic.id);
      expect(await deploymentsOf(build)).toHaveLength(2);
    }
  });

  it("after it ended: the plugin gets it within 60 s of its end, other callers the next stage", async () => {
    const build = await createBuild();
    const [automatic] = (await deploymentsOf(build)) as [Json];
    await f.services.releases.completeDeployment(automatic.id as number, "failed", "ERROR no disk");
    offsetMs = 59_000;
    try {
      // The plugin follows the failed deployment (and then fetches its log), no retry is queued.
      const [followed] = f.ok<Json[]>(await plugin(t, f, appId).deploy(String(build.number)));
      expect(followed).toMatchObject({ id: automatic.id, status: "failed", pipelineStageName: "Integration" });
      expect(await deploymentsOf(build)).toHaveLength(1);
      // Anyone else: the first stage did not succeed, so "next" is the first stage again (a retry).
      const [retry] = f.ok<Json[]>(await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id }));
      expect(retry).toMatchObject({ status: "pending", pipelineStageName: "Integration" });
      expect(retry?.id).not.toBe(automatic.id);
    } finally {
      offsetMs = 0;
    }
  });

  it("once the build has any other deployment, the plugin's bare deploy is 'next stage' again", async () => {
    const build = await createBuild();
    const [automatic] = (await deploymentsOf(build)) as [Json];
    await f.services.releases.completeDeployment(automatic.id as number, "succeeded", "ok");
    const [testing] = f.ok<Json[]>(
      await f.json("POST", "/api/releases/builds/deploy", { buildId: build.id, toStage: "Testing" }),
    );
    await f.services.releases.completeDeployment(testing?.id as number, "succeeded", "ok");
    const final = await plugin(t, f, appId).deploy(String(build.number));
    expect(final.statusCode).toBe(409);
  });
});
