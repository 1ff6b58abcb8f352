import { beforeAll, describe, expect, it } from "vitest";
import { type CatalogRepository, createCatalogRepository } from "../../../src/areas/releases/catalog-repository.js";
import { createPostgresCatalogRepository } from "../../../src/areas/releases/catalog-repository-postgres.js";
import type {
  Application,
  ApplicationDraft,
  Build,
  Deployment,
  Pipeline,
  Release,
} from "../../../src/areas/releases/model.js";
import type { PlanStep } from "../../../src/areas/releases/plan-steps.js";
import {
  type Actor,
  type BuildDraft,
  createReleaseRepository,
  type ReleaseRepository,
  type StageEntry,
} from "../../../src/areas/releases/release-repository.js";
import { createPostgresReleaseRepository } from "../../../src/areas/releases/release-repository-postgres.js";
import { describeOnBothDatabases, present, type TestDatabase } from "../../helpers/both-databases.js";
import { onOtherNode, outcomes, whileHeld } from "../../helpers/postgres-races.js";

const NOW = "2026-11-29T10:00:00.000Z";
const LATER = "2026-11-29T11:00:00.000Z";
const ANN: Actor = { by: "Ann", now: NOW };
const BOB: Actor = { by: "Bob", now: LATER };
const STEPS: PlanStep[] = [{ type: "log", message: "deploying", level: "info" }];

const repositoriesOn = (database: TestDatabase): { releases: ReleaseRepository; catalog: CatalogRepository } =>
  database.kind === "sqlite"
    ? { releases: createReleaseRepository(database.sqlite), catalog: createCatalogRepository(database.sqlite) }
    : {
        releases: createPostgresReleaseRepository(database.postgres),
        catalog: createPostgresCatalogRepository(database.postgres),
      };

const values = <T>(results: ({ value: T } | object)[]): T[] =>
  results.flatMap((r) => ("value" in r ? [r.value as T] : []));

describeOnBothDatabases("Release repository", (database) => {
  let releases: ReleaseRepository;
  let catalog: CatalogRepository;
  let flow: Pipeline;
  let loose: Pipeline;
  let productionId: number;
  let apps = 0;

  const newApp = (fields: Partial<ApplicationDraft> = {}): Promise<Application> =>
    catalog.insertApplication(
      { name: `App${++apps}`, active: true, releaseUsage: "optional", buildNumberScheme: "sequential", ...fields },
      NOW,
    );
  const newRelease = (app: Application, number: string, fields: { name?: string; pipelineId?: number } = {}) =>
    releases.insertRelease(
      { applicationId: app.id, number, name: fields.name ?? number, variables: new Map(), ...fields },
      ANN,
    );
  const draft = (app: Application, fields: Partial<BuildDraft> = {}): BuildDraft => ({
    applicationId: app.id,
    scheme: app.buildNumberScheme,
    variables: new Map(),
    rejectPreviousPipelineLess: false,
    ...fields,
  });
  const entry = (pipeline: Pipeline, position: number, fields: Partial<StageEntry> = {}): StageEntry => ({
    pipelineName: pipeline.name,
    stageName: pipeline.stages[position]?.name ?? "",
    stagePosition: position,
    planSteps: STEPS,
    forced: false,
    rejectOlder: pipeline.rejectOlderBuilds,
    variables: new Map(),
    ...fields,
  });
  /** A build of `release` with its pending first-stage deployment. */
  const buildIn = async (release: Release, fields: Partial<BuildDraft> = {}) => {
    const app = present(await catalog.findApplication(release.applicationId));
    const { build, deployments } = await releases.insertBuild(
      draft(app, { releaseId: release.id, pipelineId: flow.id, ...fields }),
      entry(flow, 0),
      ANN,
    );
    return { build, deployment: present(deployments[0]) };
  };
  const eventsAfter = async (id: number) =>
    (await database().exec("SELECT type, actor, data FROM lifecycle_events WHERE id > ? ORDER BY id", [id])).map(
      (row) => ({ type: row.type, actor: row.actor, data: JSON.parse(row.data as string) as unknown }),
    );
  const lastEvent = async () =>
    Number((await database().exec("SELECT coalesce(max(id), 0) AS n FROM lifecycle_events"))[0]?.n);

  beforeAll(async () => {
    ({ releases, catalog } = repositoriesOn(database()));
    productionId = (await catalog.insertEnvironment({ name: "Production", active: true, variables: {} })).id;
    flow = await catalog.insertPipeline(
      {
        name: "Flow",
        rejectOlderBuilds: true,
        stages: [{ name: "Build" }, { name: "Test" }, { name: "Prod", environmentName: "Production" }],
      },
      NOW,
    );
    loose = await catalog.insertPipeline({ name: "Loose", rejectOlderBuilds: false, stages: [{ name: "Only" }] }, NOW);
  });

  describe("releases", () => {
    it("inserts releases numbered in sequence per application, with variables; a taken number is RELEASE_EXISTS", async () => {
      const web = await newApp();
      const api = await newApp();
      const first = await releases.insertRelease(
        {
          applicationId: web.id,
          number: "1.0",
          name: "First",
          pipelineId: flow.id,
          template: "standard",
          variables: new Map([
            ["Branch", "main"],
            ["Owner", "ann"],
          ]),
        },
        ANN,
      );
      expect(first).toEqual({
        id: first.id,
        applicationId: web.id,
        applicationName: web.name,
        number: "1.0",
        name: "First",
        sequence: 1,
        pipelineId: flow.id,
        pipelineName: "Flow",
        status: "active",
        template: "standard",
        createdBy: "Ann",
        createdOn: NOW,
      });
      const second = await releases.insertRelease(
        { applicationId: web.id, number: "2.0", name: "Second", variables: new Map() },
        BOB,
      );
      expect(second).toEqual({
        id: second.id,
        applicationId: web.id,
        applicationName: web.name,
        number: "2.0",
        name: "Second",
        sequence: 2,
        status: "active",
        createdBy: "Bob",
        createdOn: LATER,
      });
      expect((await newRelease(api, "1.0")).sequence).toBe(1);
      expect([...(await releases.variablesOf("release", first.id))]).toEqual([
        ["Branch", "main"],
        ["Owner", "ann"],
      ]);
      expect(await releases.findRelease(first.id)).toEqual(first);
      expect(await releases.findRelease(999_999)).toBeUndefined();

      await expect(newRelease(web, "1.0")).rejects.toMatchObject({
        kind: "conflict",
        code: "RELEASE_EXISTS",
        message: "The application already has a release numbered '1.0'.",
      });
      // Two variables whose names differ in letter case only are one name: the insert is undone.
      await expect(
        releases.insertRelease(
          {
            applicationId: web.id,
            number: "3.0",
            name: "3.0",
            variables: new Map([
              ["A", "1"],
              ["a", "2"],
            ]),
          },
          ANN,
        ),
      ).rejects.toMatchObject({ kind: "conflict", code: "RELEASE_EXISTS" });
      expect((await releases.listReleases({ applicationId: web.id })).map((r) => r.number)).toEqual(["2.0", "1.0"]);
    });

    it("lists releases newest first under every filter, and counts the active ones per application", async () => {
      const app = await newApp({ name: "Listed" });
      const other = await newApp();
      const a = await newRelease(app, "A1", { name: "Café", pipelineId: flow.id });
      const b = await newRelease(app, "b2", { name: "ÉCLAIR" });
      const c = await newRelease(other, "A1");
      expect(await releases.listReleases({ applicationId: app.id })).toEqual([b, a]);
      expect(await releases.listReleases({ applicationName: "LISTED" })).toEqual([b, a]);
      expect(await releases.listReleases({ releaseId: a.id })).toEqual([a]);
      expect(await releases.listReleases({ releaseNumber: "a1" })).toEqual([c, a]);
      expect(await releases.listReleases({ releaseNumber: "B2", applicationId: app.id })).toEqual([b]);
      expect(await releases.listReleases({ pipelineName: "FLOW", applicationId: app.id })).toEqual([a]);
      expect(await releases.listReleases({ status: "active", applicationId: other.id })).toEqual([c]);
      expect(await releases.listReleases({ status: "canceled", applicationId: app.id })).toEqual([]);
      // Names are compared with ASCII letters folded only, on both databases.
      expect(await releases.listReleases({ releaseName: "CAFÉ" })).toEqual([a]);
      expect(await releases.listReleases({ releaseName: "éclair" })).toEqual([]);
      expect((await releases.listReleases({})).slice(0, 3)).toEqual([c, b, a]);

      await releases.cancelRelease(b.id, undefined, ANN);
      const counts = await releases.countActiveReleases();
      expect(counts.get(app.id)).toBe(1);
      expect(counts.get(other.id)).toBe(1);
      expect([...counts.keys()]).toEqual([...counts.keys()].sort((x, y) => x - y));
      expect([...(await releases.countActiveReleases(app.id))]).toEqual([[app.id, 1]]);
      expect(await releases.countActiveReleases(999_999)).toEqual(new Map());
    });

    it("cancels a release: rejects its active builds and cancels their pending deployments, with their events in order", async () => {
      const app = await newApp();
      const release = await newRelease(app, "1.0", { pipelineId: flow.id });
      const pending = await buildIn(release, { number: "p" });
      const executing = await releases.insertBuild(
        draft(app, { releaseId: release.id, pipelineId: loose.id, number: "x" }),
        entry(loose, 0),
        ANN,
      );
      const running = present(executing.deployments[0]);
      expect(await releases.startDeployment(running.id, undefined, NOW)).toBe(true);
      const before = await lastEvent();

      const canceled = await releases.cancelRelease(release.id, "superseded", BOB);
      // Its builds are all rejected now: none is its latest or furthest any more.
      expect(canceled).toEqual({ ...release, status: "canceled", canceledBy: "Bob", canceledOn: LATER });
      expect(canceled.latestBuild).toBeUndefined();
      const rejected = { status: "rejected", rejectedBy: "Bob", rejectedOn: LATER };
      expect(await releases.findBuild(pending.build.id)).toEqual({ ...pending.build, ...rejected });
      expect(await releases.findBuild(executing.build.id)).toEqual({ ...executing.build, ...rejected });
      expect(await releases.findDeployment(pending.deployment.id)).toEqual({
        ...pending.deployment,
        status: "failed",
        canceledBy: "Bob",
        canceledOn: LATER,
        ended: LATER,
        log: "Canceled: release canceled\n",
      });
      expect(await releases.findDeployment(running.id)).toEqual({ ...running, status: "executing", started: NOW });
      const names = { application: app.name, release: "1.0" };
      expect(await eventsAfter(before)).toEqual([
        {
          type: "release.status",
          actor: "Bob",
          data: { ...names, status: "canceled", previousStatus: "active" },
        },
        {
          type: "build.status",
          actor: "Bob",
          data: { ...names, build: "p", status: "rejected", previousStatus: "active" },
        },
        {
          type: "deployment.status",
          actor: "Bob",
          data: {
            ...names,
            build: "p",
            deployment: pending.deployment.id,
            pipeline: "Flow",
            stage: "Build",
            environment: null,
            status: "failed",
            previousStatus: "pending",
          },
        },
        {
          type: "build.status",
          actor: "Bob",
          data: { ...names, build: "x", status: "rejected", previousStatus: "active" },
        },
      ]);

      const restored = await releases.restoreRelease(release.id);
      expect(restored).toEqual(release);
      expect(restored.canceledBy).toBeUndefined();
      expect(await releases.cancelRelease(999_999, undefined, ANN)).toBeUndefined();
      expect(await releases.restoreRelease(999_999)).toBeUndefined();
    });
  });

  describe("builds", () => {
    it("inserts a build with its first deployment, shown whole; the release shows it as latest and furthest", async () => {
      const app = await newApp();
      const release = await newRelease(app, "1.0", { name: "One", pipelineId: flow.id });
      const { build, deployments } = await releases.insertBuild(
        draft(app, { releaseId: release.id, pipelineId: flow.id, variables: new Map([["Branch", "main"]]) }),
        entry(flow, 0, {
          environmentId: productionId,
          environmentName: "Production",
          startAfter: LATER,
          forced: true,
          planName: "deploy",
          variables: new Map([["Target", "eu"]]),
        }),
        ANN,
      );
      const common = {
        applicationId: app.id,
        applicationName: app.name,
        releaseId: release.id,
        releaseNumber: "1.0",
        releaseName: "One",
      };
      expect(build).toEqual({
        id: build.id,
        ...common,
        pipelineId: flow.id,
        pipelineName: "Flow",
        number: "1",
        status: "active",
        furthestStage: "Build",
        furthestPosition: 0,
        createdBy: "Ann",
        createdOn: NOW,
      });
      expect(deployments).toEqual([
        {
          id: deployments[0]?.id,
          buildId: build.id,
          buildNumber: "1",
          ...common,
          pipelineName: "Flow",
          stageName: "Build",
          stagePosition: 0,
          planName: "deploy",
          planSteps: STEPS,
          environmentId: productionId,
          environmentName: "Production",
          status: "pending",
          forced: true,
          startAfter: LATER,
          createdBy: "Ann",
          createdOn: NOW,
          log: "",
        },
      ]);
      expect(await releases.findBuild(build.id)).toEqual(build);
      expect(await releases.findBuild(999_999)).toBeUndefined();
      expect([...(await releases.variablesOf("build", build.id))]).toEqual([["Branch", "main"]]);
      expect([...(await releases.variablesOf("deployment", present(deployments[0]).id))]).toEqual([["Target", "eu"]]);
      expect(await releases.findRelease(release.id)).toEqual({
        ...release,
        latestBuild: { id: build.id, number: "1" },
        furthestBuild: { id: build.id, number: "1" },
      });
    });

    it("numbers builds by the application's scheme; a taken number is BUILD_EXISTS", async () => {
      const web = await newApp();
      const r1 = await newRelease(web, "1.0");
      const r2 = await newRelease(web, "2.0");
      const numberOf = async (app: Application, fields: Partial<BuildDraft>, actor = ANN) =>
        (await releases.insertBuild(draft(app, fields), undefined, actor)).build.number;
      expect(await numberOf(web, { releaseId: r1.id })).toBe("1");
      expect(await numberOf(web, { releaseId: r1.id, number: "7" })).toBe("7");
      expect(await numberOf(web, { releaseId: r1.id })).toBe("8");
      expect(await numberOf(web, { releaseId: r1.id, number: "RC-1" })).toBe("RC-1");
      expect(await numberOf(web, { releaseId: r1.id })).toBe("10");
      expect(await numberOf(web, { releaseId: r2.id })).toBe("1");
      expect(await numberOf(web, {})).toBe("1");

      const unique = await newApp({ buildNumberScheme: "unique" });
      const u1 = await newRelease(unique, "1.0");
      const u2 = await newRelease(unique, "2.0");
      expect(await numberOf(unique, { releaseId: u1.id })).toBe("1");
      expect(await numberOf(unique, { releaseId: u2.id })).toBe("2");
      expect(await numberOf(unique, {})).toBe("3");

      const dated = await newApp({ buildNumberScheme: "date-based" });
      expect(await numberOf(dated, {}, BOB)).toBe("20261129.1");
      expect(await numberOf(dated, {}, BOB)).toBe("20261129.2");

      await expect(numberOf(web, { releaseId: r1.id, number: "rc-1" })).rejects.toMatchObject({
        kind: "conflict",
        code: "BUILD_EXISTS",
        message: "A build numbered 'rc-1' already exists.",
      });
      expect((await releases.listBuilds({ releaseId: r1.id })).map((b) => b.number)).toEqual([
        "10",
        "RC-1",
        "8",
        "7",
        "1",
      ]);
    });

    it("a new pipeline-less build rejects the application's active pipeline-less ones and cancels their pending deployments", async () => {
      const app = await newApp();
      const first = (await releases.insertBuild(draft(app, { rejectPreviousPipelineLess: true }), undefined, ANN))
        .build;
      const pending = await releases.enterStage(first.id, entry(loose, 0), ANN);
      const withPipeline = (await releases.insertBuild(draft(app, { pipelineId: loose.id }), entry(loose, 0), ANN))
        .build;
      const second = (await releases.insertBuild(draft(app, { rejectPreviousPipelineLess: true }), undefined, BOB))
        .build;
      expect(await releases.findBuild(first.id)).toEqual({
        ...first,
        furthestStage: "Only",
        furthestPosition: 0,
        status: "rejected",
        rejectedBy: "SYSTEM",
        rejectedOn: LATER,
      });
      expect(await releases.findDeployment(pending.id)).toEqual({
        ...pending,
        status: "failed",
        canceledBy: "SYSTEM",
        canceledOn: LATER,
        ended: LATER,
        log: "Canceled: a newer pipeline-less build was created\n",
      });
      expect((await releases.findBuild(withPipeline.id))?.status).toBe("active");
      expect((await releases.findBuild(second.id))?.status).toBe("active");
    });

    it("enters stages: the furthest stage only moves forward; a newer build rejects the release's older ones in that stage", async () => {
      const app = await newApp();
      const release = await newRelease(app, "1.0", { pipelineId: flow.id });
      const older = await buildIn(release);
      const newer = await buildIn(release);
      expect(await releases.findBuild(older.build.id)).toEqual({
        ...older.build,
        status: "rejected",
        rejectedBy: "SYSTEM",
        rejectedOn: NOW,
      });
      expect((await releases.findDeployment(older.deployment.id))?.log).toBe(
        `Canceled: build ${newer.build.number} entered stage Build\n`,
      );

      const prod = await releases.enterStage(newer.build.id, entry(flow, 2, { forced: true }), BOB);
      expect(prod).toEqual({
        ...newer.deployment,
        id: prod.id,
        stageName: "Prod",
        stagePosition: 2,
        forced: true,
        createdBy: "Bob",
        createdOn: LATER,
      });
      await releases.enterStage(newer.build.id, entry(flow, 1), BOB);
      expect(await releases.findBuild(newer.build.id)).toEqual({
        ...newer.build,
        furthestStage: "Prod",
        furthestPosition: 2,
      });
      // A pipeline that does not reject older builds leaves them be.
      const third = await buildIn(release);
      await releases.enterStage(third.build.id, entry(flow, 0, { rejectOlder: false }), ANN);
      expect((await releases.findBuild(newer.build.id))?.status).toBe("active");
    });

    it("rejects a build and cancels its pending deployments only", async () => {
      const app = await newApp();
      const release = await newRelease(app, "1.0", { pipelineId: flow.id });
      const { build, deployment } = await buildIn(release);
      const running = await releases.enterStage(build.id, entry(flow, 1), ANN);
      await releases.startDeployment(running.id, undefined, NOW);
      const rejected = await releases.rejectBuild(build.id, BOB);
      expect(rejected).toEqual({
        ...build,
        furthestStage: "Test",
        furthestPosition: 1,
        status: "rejected",
        rejectedBy: "Bob",
        rejectedOn: LATER,
      });
      expect(await releases.findDeployment(deployment.id)).toEqual({
        ...deployment,
        status: "failed",
        canceledBy: "Bob",
        canceledOn: LATER,
        ended: LATER,
        log: "Canceled: build rejected\n",
      });
      expect((await releases.findDeployment(running.id))?.status).toBe("executing");
      expect(await releases.rejectBuild(999_999, BOB)).toBeUndefined();
    });

    it("lists builds newest first under every filter, variables by name in any letter case and exact value", async () => {
      const app = await newApp({ name: "Filtered" });
      const release = await newRelease(app, "R1", { name: "Rel One", pipelineId: flow.id });
      const main = await releases.insertBuild(
        draft(app, { releaseId: release.id, pipelineId: flow.id, variables: new Map([["Branch", "main"]]) }),
        entry(flow, 0, { rejectOlder: false }),
        ANN,
      );
      const dev = await releases.insertBuild(
        draft(app, {
          releaseId: release.id,
          pipelineId: flow.id,
          variables: new Map([
            ["Branch", "Dev"],
            ["Team", "a"],
          ]),
        }),
        entry(flow, 0, { rejectOlder: false }),
        ANN,
      );
      await releases.enterStage(dev.build.id, entry(flow, 1), ANN);
      const lone = (await releases.insertBuild(draft(app, { pipelineId: loose.id }), undefined, ANN)).build;
      const [m, d] = [
        present(await releases.findBuild(main.build.id)),
        present(await releases.findBuild(dev.build.id)),
      ];

      expect(await releases.listBuilds({ applicationName: "filtered" })).toEqual([lone, d, m]);
      expect(await releases.listBuilds({ releaseNumber: "r1", applicationId: app.id })).toEqual([d, m]);
      expect(await releases.listBuilds({ releaseName: "REL ONE" })).toEqual([d, m]);
      expect(await releases.listBuilds({ pipelineName: "LOOSE", applicationId: app.id })).toEqual([lone]);
      expect(await releases.listBuilds({ buildId: m.id })).toEqual([m]);
      expect(await releases.listBuilds({ buildNumber: "2", releaseId: release.id })).toEqual([d]);
      expect(await releases.listBuilds({ furthestStage: "test", applicationId: app.id })).toEqual([d]);
      expect(await releases.listBuilds({ status: "active", applicationId: app.id })).toEqual([lone, d, m]);
      expect(await releases.listBuilds({ applicationId: app.id, variables: new Map([["branch", "main"]]) })).toEqual([
        m,
      ]);
      expect(await releases.listBuilds({ applicationId: app.id, variables: new Map([["BRANCH", "dev"]]) })).toEqual([]);
      expect(
        await releases.listBuilds({
          applicationId: app.id,
          variables: new Map([
            ["Branch", "Dev"],
            ["team", "a"],
          ]),
        }),
      ).toEqual([d]);
      expect(await releases.listBuilds({ applicationId: app.id, limit: 1.7 })).toEqual([lone]);
      expect(await releases.listBuilds({ applicationId: app.id, limit: -3 })).toEqual([]);
      expect(await releases.listBuilds({ applicationId: app.id, limit: 2 })).toEqual([lone, d]);
    });
  });

  describe("deployments", () => {
    it("lists pending and unassigned deployments oldest first, and all deployments newest first under every filter", async () => {
      const app = await newApp({ name: "Deploying" });
      const release = await newRelease(app, "D1", { name: "Dep One", pipelineId: flow.id });
      const { build, deployment: first } = await buildIn(release);
      const later = await releases.enterStage(build.id, entry(flow, 1, { startAfter: LATER }), ANN);
      const prod = await releases.enterStage(
        build.id,
        entry(flow, 2, { environmentId: productionId, environmentName: "Production" }),
        ANN,
      );
      const mine = (d: Deployment) => d.buildId === build.id;

      expect((await releases.pendingDeployments(NOW, 100)).filter(mine)).toEqual([first, prod]);
      expect((await releases.pendingDeployments(LATER, 100)).filter(mine)).toEqual([first, later, prod]);
      expect((await releases.unassignedDeployments(1000)).filter(mine)).toEqual([first, later, prod]);
      expect(await releases.pendingDeployments(NOW, 0)).toEqual([]);
      expect((await releases.unassignedDeployments(-1)).filter(mine)).toEqual([first, later, prod]);

      expect(await releases.listDeployments({ buildId: build.id })).toEqual([prod, later, first]);
      expect(await releases.listDeployments({ applicationName: "DEPLOYING", limit: 1 })).toEqual([prod]);
      expect(await releases.listDeployments({ releaseName: "dep one", pipelineStageName: "TEST" })).toEqual([later]);
      expect(
        await releases.listDeployments({ pipelineName: "flow", releaseNumber: "d1", applicationId: app.id }),
      ).toEqual([prod, later, first]);
      expect(
        await releases.listDeployments({ environmentName: "production", buildNumber: "1", releaseId: release.id }),
      ).toEqual([prod]);
      expect(await releases.listDeployments({ environmentId: productionId, applicationId: app.id })).toEqual([prod]);
      expect(await releases.listDeployments({ deploymentId: first.id, status: "pending" })).toEqual([first]);
      expect(await releases.listDeployments({ deploymentId: first.id, status: "failed" })).toEqual([]);
      expect(await releases.findDeployment(first.id)).toEqual(first);
      expect(await releases.findDeployment(999_999)).toBeUndefined();
    });

    it("assigns an execution once, starts a pending deployment once (and not another execution's), finishes it once", async () => {
      const app = await newApp();
      const release = await newRelease(app, "1.0", { pipelineId: flow.id });
      const { build, deployment } = await buildIn(release);
      expect(await releases.assignExecution(deployment.id, 10)).toBe(true);
      expect(await releases.assignExecution(deployment.id, 11)).toBe(false);
      expect((await releases.unassignedDeployments(1000)).some((d) => d.id === deployment.id)).toBe(false);
      expect(await releases.startDeployment(deployment.id, 11, NOW)).toBe(false);
      expect(await releases.startDeployment(deployment.id, 10, NOW)).toBe(true);
      expect(await releases.startDeployment(deployment.id, 10, NOW)).toBe(false);
      expect(await releases.assignExecution(deployment.id, 12)).toBe(false);
      expect(await releases.furthestSuccessfulPosition(build.id)).toBeUndefined();

      expect(await releases.finishDeployment(deployment.id, "warned", "done\n", false, LATER)).toBe(true);
      expect(await releases.finishDeployment(deployment.id, "failed", "again\n", false, LATER)).toBe(false);
      expect(await releases.findDeployment(deployment.id)).toEqual({
        ...deployment,
        status: "warned",
        started: NOW,
        ended: LATER,
        log: "done\n",
        executionId: 10,
      });
      expect(await releases.furthestSuccessfulPosition(build.id)).toBe(0);

      // Started without an execution id: none is recorded; finished while pending: started then.
      const test = await releases.enterStage(build.id, entry(flow, 1), ANN);
      expect(await releases.startDeployment(test.id, undefined, NOW)).toBe(true);
      expect((await releases.findDeployment(test.id))?.executionId).toBeUndefined();
      const prod = await releases.enterStage(build.id, entry(flow, 2), ANN);
      expect(await releases.finishDeployment(prod.id, "failed", "", true, LATER)).toBe(true);
      expect(await releases.findDeployment(prod.id)).toEqual({
        ...prod,
        status: "failed",
        started: LATER,
        ended: LATER,
      });
      expect(await releases.finishDeployment(999_999, "succeeded", "", true, LATER)).toBe(false);
      expect(await releases.assignExecution(999_999, 1)).toBe(false);
      expect(await releases.startDeployment(999_999, undefined, NOW)).toBe(false);
    });

    it("a success in the final stage deploys the build and its release; a failure there does not", async () => {
      const app = await newApp();
      const release = await newRelease(app, "1.0", { pipelineId: flow.id });
      const { build } = await buildIn(release);
      const failing = await releases.enterStage(build.id, entry(flow, 2, { forced: true }), ANN);
      await releases.finishDeployment(failing.id, "failed", "", true, LATER);
      expect((await releases.findBuild(build.id))?.status).toBe("active");
      const succeeding = await releases.enterStage(build.id, entry(flow, 2, { forced: true }), ANN);
      expect(await releases.finishDeployment(succeeding.id, "succeeded", "ok", true, LATER)).toBe(true);
      expect((await releases.findBuild(build.id))?.status).toBe("deployed");
      expect((await releases.findRelease(release.id))?.status).toBe("deployed");
      expect(await releases.furthestSuccessfulPosition(build.id)).toBe(2);

      // A pipeline-less build has no release to deploy.
      const lone = await releases.insertBuild(draft(app, { pipelineId: loose.id }), entry(loose, 0), ANN);
      expect(await releases.finishDeployment(present(lone.deployments[0]).id, "succeeded", "", true, LATER)).toBe(true);
      expect((await releases.findBuild(lone.build.id))?.status).toBe("deployed");
    });
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const app = await newApp();
    const before = db.commits();
    const release = await newRelease(app, "1.0", { pipelineId: flow.id });
    const { build, deployment } = await buildIn(release);
    await releases.assignExecution(deployment.id, 1);
    await releases.startDeployment(deployment.id, 1, NOW);
    await releases.finishDeployment(deployment.id, "succeeded", "", false, NOW);
    await releases.enterStage(build.id, entry(flow, 1), ANN);
    await releases.rejectBuild(build.id, ANN);
    await releases.cancelRelease(release.id, undefined, ANN);
    await releases.restoreRelease(release.id);
    expect(db.commits()).toBe(before + 9);
  });

  describe("concurrent writers on two nodes (PostgreSQL)", () => {
    it("releases created at once are numbered in sequence; one number taken twice is one RELEASE_EXISTS", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      await onOtherNode(db, createPostgresReleaseRepository, async (other) => {
        const app = await newApp();
        const results = await outcomes(
          Array.from({ length: 8 }, (_, i) =>
            (i % 2 ? other : releases).insertRelease(
              { applicationId: app.id, number: `${i}.0`, name: `${i}.0`, variables: new Map() },
              ANN,
            ),
          ),
        );
        expect(
          values<Release>(results)
            .map((r) => r.sequence)
            .sort((x, y) => x - y),
        ).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
        const same = await outcomes([
          newRelease(app, "9.0"),
          other.insertRelease({ applicationId: app.id, number: "9.0", name: "9.0", variables: new Map() }, ANN),
        ]);
        expect(values(same)).toHaveLength(1);
        expect(same.filter((r) => !("value" in r))).toEqual([{ kind: "conflict", code: "RELEASE_EXISTS" }]);
      });
    });

    it("builds created at once are numbered in sequence; one number taken twice is one BUILD_EXISTS", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      await onOtherNode(db, createPostgresReleaseRepository, async (other) => {
        const app = await newApp();
        const release = await newRelease(app, "1.0");
        const results = await outcomes(
          Array.from({ length: 8 }, (_, i) =>
            (i % 2 ? other : releases).insertBuild(draft(app, { releaseId: release.id }), undefined, ANN),
          ),
        );
        expect(
          values<{ build: Build }>(results)
            .map((r) => Number(r.build.number))
            .sort((x, y) => x - y),
        ).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
        const same = await outcomes([
          releases.insertBuild(draft(app, { releaseId: release.id, number: "v9" }), undefined, ANN),
          other.insertBuild(draft(app, { releaseId: release.id, number: "V9" }), undefined, ANN),
        ]);
        expect(values(same)).toHaveLength(1);
        expect(same.filter((r) => !("value" in r))).toEqual([{ kind: "conflict", code: "BUILD_EXISTS" }]);
      });
    });

    it("pipeline-less builds created at once leave exactly one active, the newest", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      await onOtherNode(db, createPostgresReleaseRepository, async (other) => {
        const app = await newApp();
        const results = await outcomes(
          Array.from({ length: 6 }, (_, i) =>
            (i % 2 ? other : releases).insertBuild(draft(app, { rejectPreviousPipelineLess: true }), undefined, ANN),
          ),
        );
        expect(values(results)).toHaveLength(6);
        const builds = await releases.listBuilds({ applicationId: app.id });
        expect(builds.map((b) => b.status)).toEqual(["active", ...Array<string>(5).fill("rejected")]);
      });
    });

    it("a cancel or a rejection while the final deployment finishes: both done, no deadlock, one order's outcome", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const { pool } = db.postgres;
      await onOtherNode(db, createPostgresReleaseRepository, async (other) => {
        for (let round = 0; round < 6; round++) {
          const app = await newApp();
          const release = await newRelease(app, "1.0", { pipelineId: flow.id });
          const { build } = await buildIn(release);
          const prod = await releases.enterStage(build.id, entry(flow, 2, { forced: true }), ANN);
          await releases.startDeployment(prod.id, undefined, NOW);
          // A third session holds the build's row until both writers wait: without one order of
          // locks, the cancel would hold the release and wait for the build, the finish hold the
          // build and wait for the release (a deadlock, half of the time).
          const results = await whileHeld(pool, {
            hold: (holder) => holder.query("SELECT id FROM builds WHERE id = $1 FOR UPDATE", [build.id]),
            race: () =>
              outcomes<unknown>([
                round % 2 ? releases.cancelRelease(release.id, undefined, BOB) : releases.rejectBuild(build.id, BOB),
                other.finishDeployment(prod.id, "succeeded", "", true, LATER),
              ]),
            waiters: 2,
          });
          expect(results.filter((r) => !("value" in r))).toEqual([]);
          expect(results[1]).toEqual({ value: true });
          // Finished first: the build was deployed and stays so. Rejected first: it stays rejected.
          expect(["deployed", "rejected"]).toContain((await releases.findBuild(build.id))?.status);
          expect((await releases.findDeployment(prod.id))?.status).toBe("succeeded");
        }
      });
    });

    it("the same deployment assigned, started or finished twice at once: exactly one succeeds", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      await onOtherNode(db, createPostgresReleaseRepository, async (other) => {
        const app = await newApp();
        const release = await newRelease(app, "1.0", { pipelineId: flow.id });
        const { deployment } = await buildIn(release);
        expect(
          (
            await Promise.all([releases.assignExecution(deployment.id, 1), other.assignExecution(deployment.id, 2)])
          ).filter(Boolean),
        ).toHaveLength(1);
        const { executionId } = present(await releases.findDeployment(deployment.id));
        expect(
          (
            await Promise.all([
              releases.startDeployment(deployment.id, executionId, NOW),
              other.startDeployment(deployment.id, executionId, NOW),
            ])
          ).filter(Boolean),
        ).toHaveLength(1);
        expect(
          (
            await Promise.all([
              releases.finishDeployment(deployment.id, "succeeded", "a\n", false, LATER),
              other.finishDeployment(deployment.id, "failed", "b\n", false, LATER),
            ])
          ).filter(Boolean),
        ).toHaveLength(1);
        expect(["a\n", "b\n"]).toContain((await releases.findDeployment(deployment.id))?.log);
      });
    });
  });
});
