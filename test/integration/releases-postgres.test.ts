import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createReleasesServices, type ReleasesServices } from "../../src/areas/releases/index.js";
import type { Deployment } from "../../src/areas/releases/model.js";
import { DomainError } from "../../src/domain/errors.js";
import { createPostgresJobRunner, type PostgresJobRunner } from "../../src/jobs/runner-postgres.js";
import type { MetadataDb } from "../../src/storage/metadata-db.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { describeOnBothDatabases, present, type TestDatabase } from "../helpers/both-databases.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { itOnPostgres, otherNodesForBlock } from "../helpers/postgres-races.js";
import { domainErrorOf } from "../helpers/responses.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * The releases area wired on either database (src/areas/releases/index.ts, metadata-db.ts): the
 * same service calls give the same answers on SQLite and on PostgreSQL, and on PostgreSQL a
 * deployment runs as a job of the cluster's job runner (runner-postgres.ts).
 */

const clock = { now: () => new Date() };
const log = { warn: () => undefined, error: () => undefined };
const dbOf = (database: TestDatabase): MetadataDb => (database.kind === "sqlite" ? database.sqlite : database.postgres);
const none = new Map<string, string>();

/** Application, environments, a plan and a two-stage pipeline (Integration -> Production). */
async function catalogOf(services: ReleasesServices, app: string) {
  const { catalog } = services;
  if ((await catalog.listEnvironments()).length === 0) {
    await catalog.createEnvironment({ name: "Integration", active: true, variables: { Zone: "a" } });
    await catalog.createEnvironment({ name: "Production", active: true, variables: {} });
  }
  await catalog.createPlan(`${app}-plan`, [{ type: "log", message: "integrating" }]);
  const pipeline = await catalog.createPipeline({
    name: `${app}-pipeline`,
    rejectOlderBuilds: true,
    stages: [
      { name: "Integration", environmentName: "Integration", planName: `${app}-plan` },
      {
        name: "Production",
        environmentName: "Production",
        plan: [{ type: "log", message: "deploying", level: "info" }],
      },
    ],
  });
  const application = await catalog.createApplication({
    name: app,
    active: true,
    releaseUsage: "required",
    buildNumberScheme: "sequential",
  });
  return { application, pipeline };
}

describeOnBothDatabases("Releases services", (database) => {
  let services: ReleasesServices;
  const otherNode = otherNodesForBlock(database);
  const onPostgres = itOnPostgres(database);

  beforeAll(() => {
    services = createReleasesServices({ db: dbOf(database()), clock });
  });

  it("keeps the catalog: applications, environments, plans and pipelines", async () => {
    const { catalog } = services;
    const { application, pipeline } = await catalogOf(services, "shop");
    expect(application).toEqual({
      id: application.id,
      name: "shop",
      active: true,
      releaseUsage: "required",
      buildNumberScheme: "sequential",
    });
    expect(await catalog.getPipeline("SHOP-pipeline")).toEqual(pipeline);
    expect(pipeline.stages.map((stage) => stage.name)).toEqual(["Integration", "Production"]);
    expect((await catalog.listEnvironments()).map((e) => [e.name, e.variables])).toEqual([
      ["Integration", { Zone: "a" }],
      ["Production", {}],
    ]);
    expect(await catalog.updateApplication({ name: "shop" }, { description: "the shop" })).toMatchObject({
      id: application.id,
      description: "the shop",
    });
    expect((await domainErrorOf(catalog.deletePlan("shop-plan"))).code).toBe("PLAN_IN_USE");
    const duplicate = await domainErrorOf(
      catalog.createApplication({ name: "Shop", active: true, releaseUsage: "none", buildNumberScheme: "sequential" }),
    );
    expect(duplicate.kind).toBe("conflict");
    await catalog.createEnvironment({ name: "Scratch", active: false, variables: {} });
    await catalog.deleteEnvironment("scratch");
    expect((await catalog.listEnvironments()).map((e) => e.name)).toEqual(["Integration", "Production"]);
    expect((await domainErrorOf(catalog.deleteEnvironment("scratch"))).kind).toBe("not_found");
  });

  it("takes a release's build through its pipeline: deployments, their ends, the release deployed", async () => {
    const { releases } = services;
    const { application } = await catalogOf(services, "billing");
    const release = await releases.createRelease(
      {
        applicationId: application.id,
        releaseNumber: "1.0",
        pipelineName: "billing-pipeline",
        variables: new Map([["Color", "blue"]]),
      },
      "alice",
    );
    expect(release).toMatchObject({ applicationName: "billing", number: "1.0", status: "active", createdBy: "alice" });

    const { build, deployments } = await releases.createBuild(
      { applicationId: application.id, releaseNumber: "1.0", variables: new Map([["Size", "9"]]) },
      "alice",
    );
    expect(build).toMatchObject({ number: "1", releaseNumber: "1.0", status: "active" });
    const first = present(deployments[0]);
    expect(first).toMatchObject({ stageName: "Integration", environmentName: "Integration", status: "pending" });
    expect(first.planSteps).toEqual([{ type: "log", message: "integrating", level: "info" }]);
    expect((await releases.unassignedDeployments(10)).map((d) => d.id)).toEqual([first.id]);
    expect(await releases.assignExecution(first.id, 77)).toBe(true);
    expect(await releases.assignExecution(first.id, 78)).toBe(false);
    expect(await releases.startDeployment(first.id, 78)).toBe(false);
    expect(await releases.startDeployment(first.id, 77)).toBe(true);
    expect(await releases.completeDeployment(first.id, "succeeded", "done\n")).toMatchObject({
      status: "succeeded",
      log: "done\n",
      executionId: 77,
    });
    expect((await domainErrorOf(releases.completeDeployment(first.id, "failed", ""))).kind).toBe("conflict");

    const [second] = await releases.deployBuild(
      { applicationId: application.id, releaseNumber: "1.0", buildNumber: "1", force: false, variables: none },
      "bob",
    );
    expect(second).toMatchObject({ stageName: "Production", status: "pending", createdBy: "bob" });
    const deployment = present(second);
    expect(Object.fromEntries(await releases.variablesForDeployment(deployment.id))).toEqual({
      Color: "blue",
      Size: "9",
    });
    expect(await releases.startDeployment(deployment.id)).toBe(true);
    await releases.completeDeployment(deployment.id, "warned", "");
    expect((await releases.listBuilds({ applicationId: application.id }))[0]?.status).toBe("deployed");
    expect((await releases.listReleases({ applicationId: application.id }))[0]?.status).toBe("deployed");
    expect(
      (await releases.listDeployments({ buildId: build.id })).map((d: Deployment) => [d.stageName, d.status]),
    ).toEqual([
      ["Production", "warned"],
      ["Integration", "succeeded"],
    ]);

    const other = await releases.createRelease(
      { applicationId: application.id, releaseNumber: "2.0", variables: none },
      "alice",
    );
    expect(await releases.cancelRelease({ releaseId: other.id }, "not needed", "alice")).toMatchObject({
      status: "canceled",
      canceledBy: "alice",
    });
    expect(await releases.restoreRelease({ releaseId: other.id })).toMatchObject({ status: "active" });
    expect((await releases.countActiveReleases(application.id)).get(application.id)).toBe(1);
  });

  it("keeps a release's change scripts", async () => {
    const { releases, changeScripts } = services;
    const { application } = await catalogOf(services, "ledger");
    await releases.createRelease({ applicationId: application.id, releaseNumber: "3.1", variables: none }, "alice");
    const script = await changeScripts.save(
      { applicationId: application.id, releaseNumber: "3.1", name: " 001-init.sql ", text: "CREATE TABLE t (x int);" },
      "alice",
    );
    expect(script).toMatchObject({
      applicationName: "ledger",
      releaseNumber: "3.1",
      name: "001-init.sql",
      active: true,
      createdBy: "alice",
      modifiedBy: "alice",
    });
    const renamed = await changeScripts.save(
      { applicationId: application.id, releaseNumber: "3.1", scriptId: script.id, name: "001.sql", text: "SELECT 1;" },
      "bob",
    );
    expect(renamed).toMatchObject({ id: script.id, guid: script.guid, name: "001.sql", modifiedBy: "bob" });
    expect(await changeScripts.list({ applicationId: application.id, includeInactive: false })).toEqual([renamed]);
    expect(await changeScripts.find(script.id)).toEqual(renamed);
    expect(await changeScripts.delete(script.id)).toBe(true);
    expect(await changeScripts.delete(script.id)).toBe(false);
    const gone = { applicationId: application.id, releaseNumber: "3.1", scriptId: script.id, name: "a", text: "b" };
    expect((await domainErrorOf(changeScripts.save(gone, "bob"))).kind).toBe("not_found");
    const noRelease = { applicationId: application.id, releaseNumber: "9.9", name: "a", text: "b" };
    expect((await domainErrorOf(changeScripts.save(noRelease, "bob"))).kind).toBe("not_found");
  });

  onPostgres("two nodes creating one application: one gets it, the other the same conflict as on SQLite", async () => {
    const nodes = [services, createReleasesServices({ db: otherNode(), clock })];
    const results = await Promise.allSettled(
      nodes.map((node) =>
        node.catalog.createApplication({
          name: "Race",
          active: true,
          releaseUsage: "optional",
          buildNumberScheme: "sequential",
        }),
      ),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    const lost = results.find((result) => result.status === "rejected");
    expect(lost?.reason).toBeInstanceOf(DomainError);
    expect((lost?.reason as DomainError).kind).toBe("conflict");
  });
});

describe.skipIf(!postgresInstalled())("Deployments on PostgreSQL", () => {
  let node: NodeDatabase;
  let jobs: PostgresJobRunner;
  let services: ReleasesServices;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "wharf-releases-pg-"));
    node = await openNodeDatabase({ url: await testPostgres().createDatabase(), nodeId: "test", migrate: true });
    jobs = createPostgresJobRunner({ db: node.db, nodeId: "test", clock, concurrency: 2, log, pollMs: 50 });
    services = createReleasesServices({
      db: node.db,
      clock,
      runner: {
        config: {
          dataDir,
          deployRoot: undefined,
          deployConcurrency: 2,
          fetchAllowPrivate: false,
          fetchTimeoutMs: 5_000,
          fetchMaxBytes: 1_000_000,
          outboundProxy: undefined,
        },
        log,
        fetchPackage: async () => {
          throw new Error("no packages here");
        },
        jobs,
      },
    });
    await jobs.start();
    await present(services.runner).start();
  });

  afterAll(async () => {
    await services?.runner?.stop();
    await jobs?.stop();
    await node?.close();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  async function ended(id: number): Promise<Deployment> {
    for (let attempt = 0; attempt < 200; attempt++) {
      const deployment = present(await services.releases.findDeployment(id));
      if (deployment.status !== "pending" && deployment.status !== "executing") return deployment;
      await sleep(25);
    }
    throw new Error(`deployment ${id} did not end`);
  }

  it("runs a build's deployment as a job of the cluster's runner and keeps its log", async () => {
    const { application } = await catalogOf(services, "web");
    await services.releases.createRelease(
      { applicationId: application.id, releaseNumber: "1.0", pipelineName: "web-pipeline", variables: none },
      "alice",
    );
    const { deployments } = await services.releases.createBuild(
      { applicationId: application.id, releaseNumber: "1.0", variables: none },
      "alice",
    );
    const deployment = await ended(present(deployments[0]).id);
    expect(deployment.status).toBe("succeeded");
    expect(deployment.executionId).toBeDefined();
    expect(deployment.log).toMatch(/INFO {2}Deploying web build 1 to Integration \(Integration\)\./);
    expect(deployment.log).toMatch(/integrating/);
    expect(await present(services.runner).logOf(deployment)).toBe(deployment.log);
    const job = present(await jobs.findJob(present(deployment.executionId)));
    expect(job).toMatchObject({ kind: "deployment", status: "succeeded" });

    const [next] = await services.releases.deployBuild(
      { applicationId: application.id, releaseNumber: "1.0", buildNumber: "1", force: false, variables: none },
      "alice",
    );
    expect((await ended(present(next).id)).status).toBe("succeeded");
    expect((await services.releases.listReleases({ applicationId: application.id }))[0]?.status).toBe("deployed");
  });
});
