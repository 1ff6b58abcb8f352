import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * The Jenkins BuildMaster plugin sequence of docs/compat.md 7.5 steps 3-6 (docs/clients.md 3.8), with its
 * exact encoding: form bodies carrying the key as `key`, a stray `charset` header, `$Var` with an
 * unencoded `$`, PUT for create and deploy. Every field the plugin parses is checked.
 */
let t: TestApp;
let f: ReleasesFixtures;
let appId: number;

beforeAll(async () => {
  // Deployments are driven by hand here (startDeployment/completeDeployment): no runner.
  t = await buildTestApp({ env: { WHARF_DEPLOY_CONCURRENCY: "0" } });
  f = releasesFixtures(t);
  appId = await f.setup("Jenkins App");
  await f.release(appId, "1.0.0", "Jenkins App-pipeline");
  await f.release(appId, "1.1.0", "Jenkins App-pipeline");
});
afterAll(async () => t.close());

describe("Jenkins BuildMaster plugin (docs/compat.md 7.5)", () => {
  it("runs steps 3 to 6 and sees the deployment succeed", async () => {
    const key = t.adminKey;
    // Step 3: releases, newest first; [0] is LATEST.
    const releases = f.ok<Array<Record<string, unknown>>>(
      await f.form("POST", "/api/releases", [
        ["key", key],
        ["applicationId", String(appId)],
        ["status", "active"],
      ]),
    );
    expect(releases.map((r) => r.number)).toEqual(["1.1.0", "1.0.0"]);
    const [byNumber] = f.ok<Array<Record<string, unknown>>>(
      await f.form("POST", "/api/releases", [
        ["key", key],
        ["applicationId", String(appId)],
        ["releaseNumber", "1.1.0"],
      ]),
    );
    expect(byNumber).toMatchObject({ number: "1.1.0", releaseNumber: "1.1.0", status: "active", applicationId: appId });
    expect(byNumber).not.toHaveProperty("latestBuildNumber");
    expect(byNumber).not.toHaveProperty("pipelineId");

    // Step 4: PUT builds/create with a variable.
    const create = await f.form("PUT", "/api/releases/builds/create", [
      ["key", key],
      ["applicationId", String(appId)],
      ["releaseNumber", "1.1.0"],
      ["$JenkinsBuild", "42"],
    ]);
    const build = f.ok<Record<string, unknown>>(create);
    expect(build).toMatchObject({
      number: "1",
      buildNumber: "1",
      status: "active",
      releaseNumber: "1.1.0",
      createdBy: "API",
      furthestStage: "Integration",
    });
    const [after] = f.ok<Array<Record<string, unknown>>>(
      await f.form("POST", "/api/releases", [
        ["key", key],
        ["applicationId", String(appId)],
        ["releaseNumber", "1.1.0"],
      ]),
    );
    expect(Number.parseInt(after?.latestBuildNumber as string, 10)).toBe(1);
    expect(after).toMatchObject({ latestPackageNumber: "1", latestBuildId: build.id });

    // Step 5: PUT builds/deploy to a named stage, forced; answers an array.
    const deployed = f.ok<Array<Record<string, unknown>>>(
      await f.form("PUT", "/api/releases/builds/deploy", [
        ["key", key],
        ["applicationId", String(appId)],
        ["releaseNumber", "1.1.0"],
        ["buildNumber", "1"],
        ["toStage", "Testing"],
        ["$JenkinsBuild", "42"],
        ["force", "true"],
      ]),
    );
    expect(Array.isArray(deployed)).toBe(true);
    expect(deployed).toHaveLength(1);
    const deployment = deployed[0] as Record<string, unknown>;
    expect(deployment).toMatchObject({
      status: "pending",
      pipelineStageName: "Testing",
      applicationId: appId,
      releaseNumber: "1.1.0",
      buildNumber: "1",
      packageNumber: "1",
      environmentName: "Testing",
    });
    expect(typeof deployment.environmentId).toBe("number");
    expect(deployment).not.toHaveProperty("started");
    expect(await f.services.releases.variablesForDeployment(deployment.id as number)).toEqual(
      new Map([["JenkinsBuild", "42"]]),
    );

    // Step 6: polls deployments; the first is the latest.
    const poll = () =>
      f.form("POST", "/api/releases/builds/deployments", [
        ["key", key],
        ["applicationId", String(appId)],
        ["releaseNumber", "1.1.0"],
        ["buildNumber", "1"],
      ]);
    const pending = f.ok<Array<Record<string, unknown>>>(await poll());
    expect(pending.map((d) => [d.pipelineStageName, d.status])).toEqual([
      ["Testing", "pending"],
      ["Integration", "pending"],
    ]);
    const byId = f.ok<Array<Record<string, unknown>>>(
      await f.form("POST", "/api/releases/builds/deployments", [
        ["key", key],
        ["applicationId", String(appId)],
        ["releaseNumber", "1.1.0"],
        ["deploymentId", String(deployment.id)],
      ]),
    );
    expect(byId.map((d) => d.id)).toEqual([deployment.id]);

    expect(await f.services.releases.startDeployment(deployment.id as number, 7)).toBe(true);
    const done = await f.services.releases.completeDeployment(deployment.id as number, "succeeded", "all good");
    expect(done).toMatchObject({ status: "succeeded", executionId: 7, log: "all good\n" });
    const [latest] = f.ok<Array<Record<string, unknown>>>(await poll());
    expect(latest).toMatchObject({ id: deployment.id, status: "succeeded", pipelineStageName: "Testing" });
    expect(typeof latest?.started).toBe("string");
    expect(typeof latest?.ended).toBe("string");
  });

  it("takes the key from the query or a JSON API_Key too, and refuses a bad one with the seed's sentence", async () => {
    const url = `/api/releases?key=${encodeURIComponent(t.adminKey)}&applicationId=${appId}`;
    expect(f.ok<unknown[]>(await t.app.inject({ method: "GET", url }))).toHaveLength(2);
    const jsonKey = await t.app.inject({
      method: "POST",
      url: "/api/releases",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ API_Key: t.adminKey, applicationId: appId }),
    });
    expect(f.ok<unknown[]>(jsonKey)).toHaveLength(2);
    const bad = await f.form("POST", "/api/releases", [
      ["key", "nope"],
      ["applicationId", String(appId)],
    ]);
    expect(bad.statusCode).toBe(403);
    expect(bad.body).toBe("The specified API key does not have the proper permissions to perform this action.");
    const none = await f.form("POST", "/api/releases", [["applicationId", String(appId)]]);
    expect(none.statusCode).toBe(403);
    expect(none.body).toBe("The specified API key does not have the proper permissions to perform this action.");
  });

  it("resolves application ids given as names", async () => {
    const releases = f.ok<Array<Record<string, unknown>>>(
      await f.form("POST", "/api/releases", [
        ["key", t.adminKey],
        ["applicationId", "jenkins app"],
      ]),
    );
    expect(releases).toHaveLength(2);
  });
});

describe("Jenkins BuildMaster plugin with the job runner running deployments", () => {
  it("sees the deployment it started succeed on its own while polling every few moments", async () => {
    const live = await buildTestApp();
    try {
      const g = releasesFixtures(live);
      const id = await g.setup("Live App");
      await g.release(id, "2.0", "Live App-pipeline");
      const form = (method: "PUT" | "POST", url: string, pairs: Array<[string, string]>) =>
        g.form(method, url, [
          ["key", live.adminKey],
          ["applicationId", String(id)],
          ["releaseNumber", "2.0"],
          ...pairs,
        ]);
      const build = g.ok<{ number: string }>(
        await form("PUT", "/api/releases/builds/create", [["$JenkinsBuild", "7"]]),
      );
      const deployed = g.ok<Array<{ id: number }>>(
        await form("PUT", "/api/releases/builds/deploy", [
          ["buildNumber", build.number],
          ["toStage", "Testing"],
          ["force", "true"],
        ]),
      );
      const target = deployed[0]?.id;
      // The plugin treats null, "", pending and executing as still running, and polls every 7 s.
      let latest: { id?: number; status?: string } = {};
      for (let attempt = 0; attempt < 100; attempt++) {
        [latest = {}] = g.ok<Array<{ id: number; status: string }>>(
          await form("POST", "/api/releases/builds/deployments", [["buildNumber", build.number]]),
        );
        if (latest.id === target && !["pending", "executing", "", undefined].includes(latest.status)) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(latest).toMatchObject({ id: target, status: "succeeded" });
    } finally {
      await live.close();
    }
  });
});
