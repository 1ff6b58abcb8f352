import { beforeAll, describe, expect, it } from "vitest";
import { type CatalogRepository, createCatalogRepository } from "../../../src/areas/releases/catalog-repository.js";
import { createPostgresCatalogRepository } from "../../../src/areas/releases/catalog-repository-postgres.js";
import type { ApplicationDraft, EnvironmentDraft, PipelineDraft } from "../../../src/areas/releases/model.js";
import type { PlanStep } from "../../../src/areas/releases/plan-steps.js";
import { describeOnBothDatabases, present, type TestDatabase } from "../../helpers/both-databases.js";
import { onOtherNode, outcomes, untilWaitingOnLocks, whileHeld } from "../../helpers/postgres-races.js";
import { insertRelease } from "../../helpers/seed-rows.js";

const NOW = "2026-11-29T10:00:00.000Z";
const LATER = "2026-11-29T11:00:00.000Z";
const STEPS: PlanStep[] = [{ type: "log", message: "deploying", level: "info" }];
const OTHER_STEPS: PlanStep[] = [{ type: "warn", message: "careful" }];

const application = (name: string, fields: Partial<ApplicationDraft> = {}): ApplicationDraft => ({
  name,
  active: true,
  releaseUsage: "optional",
  buildNumberScheme: "sequential",
  ...fields,
});
const environment = (name: string, fields: Partial<EnvironmentDraft> = {}): EnvironmentDraft => ({
  name,
  active: true,
  variables: {},
  ...fields,
});
const pipeline = (name: string, fields: Partial<PipelineDraft> = {}): PipelineDraft => ({
  name,
  rejectOlderBuilds: true,
  stages: [{ name: "Integration" }],
  ...fields,
});

const repositoryOn = (database: TestDatabase): CatalogRepository =>
  database.kind === "sqlite"
    ? createCatalogRepository(database.sqlite)
    : createPostgresCatalogRepository(database.postgres);

describeOnBothDatabases("Releases catalog repository", (database) => {
  let catalog: CatalogRepository;
  beforeAll(() => {
    catalog = repositoryOn(database());
  });

  describe("applications", () => {
    it("inserts, lists by name in any letter case, finds by id or name, updates", async () => {
      const beta = await catalog.insertApplication(application("beta", { description: "B", groupName: "g" }), NOW);
      const alpha = await catalog.insertApplication(
        application("Alpha", { active: false, releaseUsage: "required", buildNumberScheme: "date-based" }),
        NOW,
      );
      expect(beta).toEqual({
        id: beta.id,
        name: "beta",
        description: "B",
        groupName: "g",
        active: true,
        releaseUsage: "optional",
        buildNumberScheme: "sequential",
      });
      expect(alpha).toEqual({
        id: alpha.id,
        name: "Alpha",
        active: false,
        releaseUsage: "required",
        buildNumberScheme: "date-based",
      });
      expect(await catalog.listApplications()).toEqual([alpha, beta]);
      expect(await catalog.findApplication(beta.id)).toEqual(beta);
      expect(await catalog.findApplication("ALPHA")).toEqual(alpha);
      expect(await catalog.findApplication("gamma")).toBeUndefined();
      expect(await catalog.findApplication(999_999)).toBeUndefined();

      const renamed = await catalog.updateApplication(beta.id, application("Zeta", { releaseUsage: "none" }));
      expect(renamed).toEqual({
        id: beta.id,
        name: "Zeta",
        active: true,
        releaseUsage: "none",
        buildNumberScheme: "sequential",
      });
      expect(await catalog.findApplication("zeta")).toEqual(renamed);
      expect(await catalog.listApplications()).toEqual([alpha, renamed]);
    });

    it("refuses a taken name (any letter case) and an unknown id with the API's errors", async () => {
      const [alpha, zeta] = await catalog.listApplications();
      await expect(catalog.insertApplication(application("ALPHA"), NOW)).rejects.toMatchObject({
        kind: "conflict",
        code: "APPLICATION_EXISTS",
        message: "An application named 'ALPHA' already exists.",
      });
      await expect(catalog.updateApplication(zeta?.id ?? 0, application("alpha"))).rejects.toMatchObject({
        kind: "conflict",
        code: "APPLICATION_EXISTS",
      });
      await expect(catalog.updateApplication(999_999, application("omega"))).rejects.toMatchObject({
        kind: "not_found",
        code: "APPLICATION_NOT_FOUND",
        message: "No application has the id 999999.",
      });
      expect(await catalog.listApplications()).toEqual([alpha, zeta]);
    });
  });

  describe("environments", () => {
    it("inserts with and without a parent, lists by name, finds in any letter case", async () => {
      const production = await catalog.insertEnvironment(environment("Production", { variables: { Region: "eu" } }));
      const canary = await catalog.insertEnvironment(
        environment("canary", { parentName: "PRODUCTION", active: false }),
      );
      expect(production).toEqual({ id: production.id, name: "Production", active: true, variables: { Region: "eu" } });
      expect(canary).toEqual({
        id: canary.id,
        name: "canary",
        parentName: "Production",
        active: false,
        variables: {},
      });
      expect(await catalog.listEnvironments()).toEqual([canary, production]);
      expect(await catalog.findEnvironment("CANARY")).toEqual(canary);
      expect(await catalog.findEnvironment("staging")).toBeUndefined();
    });

    it("refuses a taken name and an unknown parent", async () => {
      await expect(catalog.insertEnvironment(environment("production"))).rejects.toMatchObject({
        kind: "conflict",
        code: "ENVIRONMENT_EXISTS",
        message: "An environment named 'production' already exists.",
      });
      await expect(catalog.insertEnvironment(environment("qa", { parentName: "nowhere" }))).rejects.toMatchObject({
        kind: "unprocessable",
        code: "PARENT_NOT_FOUND",
        message: "The parent environment 'nowhere' does not exist.",
      });
      expect((await catalog.listEnvironments()).map((e) => e.name)).toEqual(["canary", "Production"]);
    });

    it("updates name, parent, flags and variables; refuses itself as parent, an unknown parent, a taken name", async () => {
      const canary = present(await catalog.findEnvironment("canary"));
      const production = present(await catalog.findEnvironment("production"));
      const staging = await catalog.insertEnvironment(environment("Staging"));
      const moved = await catalog.updateEnvironment(
        canary.id,
        environment("Canary", { parentName: "staging", variables: { A: "1" } }),
      );
      expect(moved).toEqual({
        id: canary.id,
        name: "Canary",
        parentName: "Staging",
        active: true,
        variables: { A: "1" },
      });
      const topLevel = await catalog.updateEnvironment(canary.id, environment("Canary"));
      expect(topLevel).toEqual({ id: canary.id, name: "Canary", active: true, variables: {} });

      await expect(
        catalog.updateEnvironment(staging.id, environment("Staging", { parentName: "STAGING" })),
      ).rejects.toMatchObject({ kind: "unprocessable", code: "PARENT_IS_SELF" });
      await expect(
        catalog.updateEnvironment(staging.id, environment("Staging", { parentName: "nowhere" })),
      ).rejects.toMatchObject({ kind: "unprocessable", code: "PARENT_NOT_FOUND" });
      await expect(catalog.updateEnvironment(staging.id, environment("PRODUCTION"))).rejects.toMatchObject({
        kind: "conflict",
        code: "ENVIRONMENT_EXISTS",
      });
      expect(await catalog.listEnvironments()).toEqual([topLevel, production, staging]);
    });

    it("deletes once by name in any letter case; the children of a deleted parent stay, at the top level", async () => {
      await catalog.updateEnvironment(
        present(await catalog.findEnvironment("canary")).id,
        environment("Canary", { parentName: "Staging" }),
      );
      expect(await catalog.deleteEnvironment("STAGING")).toBe(true);
      expect(await catalog.deleteEnvironment("staging")).toBe(false);
      expect(await catalog.findEnvironment("canary")).toEqual({
        id: expect.any(Number),
        name: "Canary",
        active: true,
        variables: {},
      });
      expect((await catalog.listEnvironments()).map((e) => e.name)).toEqual(["Canary", "Production"]);
    });
  });

  describe("deployment plans", () => {
    it("inserts, lists by name, finds in any letter case, replaces the steps", async () => {
      const deploy = await catalog.insertPlan("Deploy", STEPS, NOW);
      const announce = await catalog.insertPlan("announce", OTHER_STEPS, NOW);
      expect(deploy).toEqual({ id: deploy.id, name: "Deploy", steps: STEPS });
      expect(await catalog.listPlans()).toEqual([announce, deploy]);
      expect(await catalog.findPlan("DEPLOY")).toEqual(deploy);
      expect(await catalog.findPlan("nothing")).toBeUndefined();

      expect(await catalog.updatePlan("deploy", OTHER_STEPS, LATER)).toEqual({
        id: deploy.id,
        name: "Deploy",
        steps: OTHER_STEPS,
      });
      expect(await catalog.findPlan("Deploy")).toEqual({ id: deploy.id, name: "Deploy", steps: OTHER_STEPS });
      expect(await catalog.updatePlan("nothing", STEPS, LATER)).toBeUndefined();
      await expect(catalog.insertPlan("ANNOUNCE", STEPS, NOW)).rejects.toMatchObject({
        kind: "conflict",
        code: "PLAN_EXISTS",
        message: "A plan named 'ANNOUNCE' already exists.",
      });
    });

    it("refuses to delete a plan a stage names (in any letter case), naming each pipeline once; deletes it once unused", async () => {
      const first = await catalog.insertPipeline(
        pipeline("Web", {
          stages: [
            { name: "Test", planName: "DEPLOY" },
            { name: "Prod", planName: "deploy" },
          ],
        }),
        NOW,
      );
      const second = await catalog.insertPipeline(
        pipeline("api", { stages: [{ name: "Test", planName: "Deploy" }] }),
        NOW,
      );
      await expect(catalog.deletePlan("deploy")).rejects.toMatchObject({
        kind: "conflict",
        code: "PLAN_IN_USE",
        message: "The deployment plan 'deploy' is used by the pipeline(s) api, Web.",
      });
      expect(await catalog.deletePipeline("web")).toBe(true);
      expect(await catalog.deletePipeline("API")).toBe(true);
      expect(first.id).not.toBe(second.id);
      expect(await catalog.deletePlan("deploy")).toBe(true);
      expect(await catalog.deletePlan("deploy")).toBe(false);
      expect((await catalog.listPlans()).map((p) => p.name)).toEqual(["announce"]);
    });
  });

  describe("pipelines", () => {
    it("inserts with ordered stages, lists by name, finds by id or name in any letter case", async () => {
      const release = await catalog.insertPipeline(
        pipeline("Release", {
          rejectOlderBuilds: false,
          stages: [
            { name: "Build" },
            { name: "Test", environmentName: "Canary", plan: STEPS },
            { name: "Prod", environmentName: "Production", planName: "announce" },
          ],
        }),
        NOW,
      );
      const hotfix = await catalog.insertPipeline(pipeline("hotfix"), NOW);
      expect(release).toEqual({
        id: release.id,
        name: "Release",
        rejectOlderBuilds: false,
        stages: [
          { name: "Build" },
          { name: "Test", environmentName: "Canary", plan: STEPS },
          { name: "Prod", environmentName: "Production", planName: "announce" },
        ],
      });
      expect(await catalog.listPipelines()).toEqual([hotfix, release]);
      expect(await catalog.findPipeline(release.id)).toEqual(release);
      expect(await catalog.findPipeline("HOTFIX")).toEqual(hotfix);
      expect(await catalog.findPipeline("nothing")).toBeUndefined();
      expect(await catalog.findPipeline(999_999)).toBeUndefined();
    });

    it("replaces name, setting and stages; refuses a taken name, and a stage named twice, as a taken name", async () => {
      const release = present(await catalog.findPipeline("release"));
      const updated = await catalog.updatePipeline(
        release.id,
        pipeline("Release 2", { stages: [{ name: "Prod", plan: OTHER_STEPS }, { name: "Build" }] }),
        LATER,
      );
      expect(updated).toEqual({
        id: release.id,
        name: "Release 2",
        rejectOlderBuilds: true,
        stages: [{ name: "Prod", plan: OTHER_STEPS }, { name: "Build" }],
      });
      expect(await catalog.findPipeline(release.id)).toEqual(updated);
      await expect(catalog.updatePipeline(release.id, pipeline("HOTFIX"), LATER)).rejects.toMatchObject({
        kind: "conflict",
        code: "PIPELINE_EXISTS",
      });
      await expect(catalog.insertPipeline(pipeline("hotFix"), NOW)).rejects.toMatchObject({
        kind: "conflict",
        code: "PIPELINE_EXISTS",
        message: "A pipeline named 'hotFix' already exists.",
      });
      await expect(
        catalog.insertPipeline(pipeline("twice", { stages: [{ name: "A" }, { name: "a" }] }), NOW),
      ).rejects.toMatchObject({ kind: "conflict", code: "PIPELINE_EXISTS" });
      // The failed writes left nothing behind.
      expect(await catalog.findPipeline(release.id)).toEqual(updated);
      expect(await catalog.findPipeline("twice")).toBeUndefined();
    });

    it("deletes an unused pipeline and its stages once; refuses one a release uses", async () => {
      const { exec } = database();
      const hotfix = present(await catalog.findPipeline("hotfix"));
      const app = present(await catalog.findApplication("alpha"));
      await insertRelease(exec, {
        applicationId: app.id,
        number: "1.0",
        sequence: 1,
        pipelineId: hotfix.id,
        createdBy: "Ann",
        createdOn: NOW,
      });
      await expect(catalog.deletePipeline("HotFix")).rejects.toMatchObject({
        kind: "conflict",
        code: "PIPELINE_IN_USE",
        message: "The pipeline 'HotFix' is used by releases or builds.",
      });
      expect(await catalog.findPipeline("hotfix")).toEqual(hotfix);

      const used = present(await catalog.findPipeline("release 2"));
      expect(await catalog.deletePipeline("release 2")).toBe(true);
      expect(await catalog.deletePipeline("release 2")).toBe(false);
      expect(await exec("SELECT count(*) AS n FROM pipeline_stages WHERE pipeline_id = ?", [used.id])).toEqual([
        { n: 0 },
      ]);
    });
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    await catalog.insertPlan("cached", STEPS, NOW);
    await catalog.updatePlan("cached", OTHER_STEPS, NOW);
    await catalog.deletePlan("cached");
    expect(db.commits()).toBe(before + 3);
  });

  describe("concurrent writers on two nodes (PostgreSQL)", () => {
    it("two creates of one name: one wins, the other gets the name conflict", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      await onOtherNode(db, createPostgresCatalogRepository, async (other) => {
        const apps = await outcomes([
          catalog.insertApplication(application("Race"), NOW),
          other.insertApplication(application("RACE"), NOW),
        ]);
        const environments = await outcomes([
          catalog.insertEnvironment(environment("race")),
          other.insertEnvironment(environment("Race")),
        ]);
        const pipelines = await outcomes([
          catalog.insertPipeline(pipeline("race", { stages: [{ name: "A" }, { name: "B" }] }), NOW),
          other.insertPipeline(pipeline("Race", { stages: [{ name: "C" }] }), NOW),
        ]);
        const plans = await outcomes([catalog.insertPlan("race", STEPS, NOW), other.insertPlan("Race", STEPS, NOW)]);
        for (const [results, code] of [
          [apps, "APPLICATION_EXISTS"],
          [environments, "ENVIRONMENT_EXISTS"],
          [pipelines, "PIPELINE_EXISTS"],
          [plans, "PLAN_EXISTS"],
        ] as const) {
          expect(results.filter((r) => "value" in r)).toHaveLength(1);
          expect(results.filter((r) => !("value" in r))).toEqual([{ kind: "conflict", code }]);
        }
        // The winner's stages, whole.
        expect([[{ name: "A" }, { name: "B" }], [{ name: "C" }]]).toContainEqual(
          (await catalog.findPipeline("race"))?.stages,
        );
      });
    });

    it("concurrent updates of one pipeline: the stages are one update's, never a mix", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      await onOtherNode(db, createPostgresCatalogRepository, async (other) => {
        const { id } = present(await catalog.findPipeline("race"));
        const left = [{ name: "L1" }, { name: "L2" }, { name: "L3" }];
        const right = [{ name: "R1" }, { name: "R2" }];
        for (let round = 0; round < 5; round++) {
          const results = await outcomes([
            catalog.updatePipeline(id, pipeline("race", { stages: left }), NOW),
            other.updatePipeline(id, pipeline("race", { stages: right }), NOW),
          ]);
          expect(results.filter((r) => !("value" in r))).toEqual([]);
          expect([left, right]).toContainEqual((await catalog.findPipeline(id))?.stages);
        }
      });
    });

    it("an environment created under a parent deleted meanwhile: created, and then moved to the top", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const { pool } = db.postgres;
      await onOtherNode(db, createPostgresCatalogRepository, async (other) => {
        for (let round = 0; round < 3; round++) {
          await catalog.insertEnvironment(environment(`parent${round}`));
          // A third session inserts the same name, uncommitted: the create waits on the unique key
          // after it found the parent, and the delete runs meanwhile. Without a lock on the parent
          // the delete would commit first and the create fail on the foreign key.
          const blocker = await pool.connect();
          let created;
          let deleted;
          try {
            await blocker.query("BEGIN");
            await blocker.query("INSERT INTO environments (name, name_key) VALUES ($1, $2)", [
              `child${round}`,
              `child${round}`,
            ]);
            const creating = outcomes([
              catalog.insertEnvironment(environment(`child${round}`, { parentName: `parent${round}` })),
            ]);
            await untilWaitingOnLocks(pool, 1);
            const deleting = other.deleteEnvironment(`parent${round}`);
            await untilWaitingOnLocks(pool, 2);
            await blocker.query("ROLLBACK");
            [[created], deleted] = await Promise.all([creating, deleting]);
          } finally {
            blocker.release();
          }
          expect(deleted).toBe(true);
          expect(created).toEqual({ value: expect.objectContaining({ parentName: `parent${round}` }) });
          expect(await catalog.findEnvironment(`child${round}`)).toEqual({
            id: expect.any(Number),
            name: `child${round}`,
            active: true,
            variables: {},
          });
        }
      });
    });

    it("two environments renamed and made each other's parent at once: as one after the other, no deadlock", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const { pool } = db.postgres;
      await onOtherNode(db, createPostgresCatalogRepository, async (other) => {
        const a = await catalog.insertEnvironment(environment("EnvA"));
        const b = await catalog.insertEnvironment(environment("EnvB"));
        for (let round = 0; round < 4; round++) {
          const [aName, bName] = [`EnvA${round}`, `EnvB${round}`];
          const [aBefore, bBefore] = round === 0 ? ["EnvA", "EnvB"] : [`EnvA${round - 1}`, `EnvB${round - 1}`];
          // A third session holds both rows until both updates wait: each would otherwise look its
          // parent up, then wait to rename its own row while the other holds it as a parent.
          const results = await whileHeld(pool, {
            hold: (holder) =>
              holder.query("SELECT id FROM environments WHERE id IN ($1, $2) FOR KEY SHARE", [a.id, b.id]),
            race: () =>
              outcomes([
                catalog.updateEnvironment(a.id, environment(aName, { parentName: bBefore })),
                other.updateEnvironment(b.id, environment(bName, { parentName: aBefore })),
              ]),
            waiters: 2,
          });
          // The second to go looks for its parent under the name the first changed.
          expect(results.filter((r) => "value" in r)).toHaveLength(1);
          expect(results.filter((r) => !("value" in r))).toEqual([{ kind: "unprocessable", code: "PARENT_NOT_FOUND" }]);
          await catalog.updateEnvironment(a.id, environment(aName));
          await catalog.updateEnvironment(b.id, environment(bName));
        }
      });
    });
  });
});
