import type pg from "pg";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import type { Build, Deployment, Release, Variables } from "./model.js";
import {
  type Actor,
  boundLimit,
  buildExists,
  type BuildDraft,
  buildNumberOf,
  canceledLine,
  deploymentParams,
  lower,
  REJECTED_BECAUSE,
  type ReleaseFilter,
  releaseExists,
  type ReleaseRepository,
  type StageEntry,
  systemActor,
  variableParams,
} from "./release-repository.js";
import {
  BUILD_SELECT,
  type BuildRow,
  DEPLOYMENT_SELECT,
  type DeploymentRow,
  RELEASE_SELECT,
  type ReleaseRow,
  toBuild,
  toDeployment,
  toRelease,
} from "./release-rows.js";

/** A list's WHERE clauses and their parameters, numbered $1, $2... in the order they are bound. */
type Where = { clauses: string[]; params: unknown[] };

/** Appends `value` to the parameters; its placeholder. */
function bind(w: Where, value: unknown): string {
  w.params.push(value);
  return `$${w.params.length}`;
}

function add(w: Where, clause: (placeholder: string) => string, value: unknown): void {
  w.clauses.push(clause(bind(w, value)));
}

const whereOf = (w: Where) => (w.clauses.length ? ` WHERE ${w.clauses.join(" AND ")}` : "");

/** As release-repository.ts commonWhere. */
function commonWhere(f: ReleaseFilter, w: Where): void {
  if (f.applicationId !== undefined) add(w, (p) => `a.id = ${p}`, f.applicationId);
  if (f.applicationName !== undefined) add(w, (p) => `a.name_key = ${p}`, lower(f.applicationName));
  if (f.releaseId !== undefined) add(w, (p) => `r.id = ${p}`, f.releaseId);
  if (f.releaseNumber !== undefined) add(w, (p) => `r.number_key = ${p}`, lower(f.releaseNumber));
  // lower() of a COLLATE "C" column changes ASCII letters only, as SQLite's lower() does.
  if (f.releaseName !== undefined) add(w, (p) => `lower(r.name) = ${p}`, lower(f.releaseName));
}

function limitOf(f: { limit?: number }, w: Where): string {
  return f.limit === undefined ? "" : ` LIMIT ${bind(w, boundLimit(f.limit))}`;
}

/** SQLite reads a negative LIMIT as "no limit"; PostgreSQL refuses one, and reads NULL so. */
const limitAsOnSqlite = (limit: number) => (limit < 0 ? null : limit);

type Read = <R extends pg.QueryResultRow>(sql: string, params: unknown[]) => Promise<R[]>;

/** The by-id reads, on the pool or inside a transaction. */
function readsOn(read: Read) {
  return {
    release: async (id: number) => {
      const [row] = await read<ReleaseRow>(`${RELEASE_SELECT} WHERE r.id = $1`, [id]);
      return row && toRelease(row);
    },
    build: async (id: number) => {
      const [row] = await read<BuildRow>(`${BUILD_SELECT} WHERE b.id = $1`, [id]);
      return row && toBuild(row);
    },
    deployment: async (id: number) => {
      const [row] = await read<DeploymentRow>(`${DEPLOYMENT_SELECT} WHERE d.id = $1`, [id]);
      return row && toDeployment(row);
    },
  };
}

/**
 * Locks of the application whose releases, builds and deployments a method changes. SQLite runs
 * one writer at a time; here every method that reads and then writes several of these rows first
 * takes its application's row FOR NO KEY UPDATE, so that two of them on one application run one
 * after the other, as on SQLite: sequences are handed out once, an older build is rejected by the
 * build that saw it, and no two of them lock release, build and deployment rows in opposite orders
 * (a cancel and a finishing deployment would deadlock). The single-row writes (assignExecution,
 * startDeployment, restoreRelease) hold one row and wait for nothing else, and need no lock.
 * Inserts that reference the application (KEY SHARE) are not held up by it.
 */
const LOCK_APPLICATION = {
  byId: "SELECT id FROM applications WHERE id = $1 FOR NO KEY UPDATE",
  ofRelease: `SELECT a.id FROM applications a JOIN releases r ON r.application_id = a.id WHERE r.id = $1
    FOR NO KEY UPDATE OF a`,
  ofBuild: `SELECT a.id FROM applications a JOIN builds b ON b.application_id = a.id WHERE b.id = $1
    FOR NO KEY UPDATE OF a`,
  ofDeployment: `SELECT a.id FROM applications a JOIN builds b ON b.application_id = a.id
    JOIN deployments d ON d.build_id = b.id WHERE d.id = $1 FOR NO KEY UPDATE OF a`,
} as const;

/** The writes of release-repository.ts, in the same order (the lifecycle events follow it), on one transaction. */
function writesOn(client: pg.PoolClient) {
  const read: Read = async <R extends pg.QueryResultRow>(sql: string, params: unknown[]) =>
    (await client.query<R>(sql, params)).rows;
  const by = readsOn(read);
  const lockApplication = async (sql: string, id: number) => {
    await client.query(sql, [id]);
  };

  const saveVariables = async (owner: "release" | "build" | "deployment", id: number, variables: Variables) => {
    for (const [name, value] of variables) {
      const v = variableParams(owner, id, name, value);
      await client.query(
        `INSERT INTO release_variables (release_id, build_id, deployment_id, name, name_key, value)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [v.release, v.build, v.deployment, v.name, v.nameKey, v.value],
      );
    }
  };

  const reject = async (buildIds: readonly number[], actor: Actor, why: string) => {
    for (const id of buildIds) {
      await client.query(
        "UPDATE builds SET status = 'rejected', rejected_by = $1, rejected_on = $2 WHERE id = $3 AND status != 'rejected'",
        [actor.by, actor.now, id],
      );
      await client.query(
        `UPDATE deployments SET status = 'failed', canceled_by = $1, canceled_on = $2, ended_at = $2,
           log = log || $3 WHERE build_id = $4 AND status = 'pending'`,
        [actor.by, actor.now, canceledLine(why), id],
      );
    }
  };

  // SQLite returns these ids in rowid order (the scan of an index on the filtered column): ORDER BY
  // id gives the same order of rejections, hence of events.
  const idsOf = async (sql: string, params: unknown[]) => (await read<{ id: number }>(sql, params)).map((r) => r.id);

  const enter = async (build: Build, entry: StageEntry, actor: Actor): Promise<number> => {
    if (entry.rejectOlder && build.releaseId !== undefined) {
      const older = await idsOf(
        `SELECT id FROM builds WHERE release_id = $1 AND id < $2 AND status = 'active' AND furthest_position = $3
         ORDER BY id`,
        [build.releaseId, build.id, entry.stagePosition],
      );
      await reject(older, systemActor(actor), REJECTED_BECAUSE.enteredStage(build, entry));
    }
    const d = deploymentParams(build.id, entry, actor);
    const [inserted] = await read<{ id: number }>(
      `INSERT INTO deployments (build_id, pipeline_name, stage_name, stage_position, plan_name, plan_steps, environment_id,
         environment_name, status, forced, start_after, created_by, created_on)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10, $11, $12) RETURNING id`,
      [
        d.buildId,
        d.pipelineName,
        d.stageName,
        d.stagePosition,
        d.planName,
        d.planSteps,
        d.environmentId,
        d.environmentName,
        d.forced,
        d.startAfter,
        d.by,
        d.now,
      ],
    );
    const id = (inserted as { id: number }).id;
    await saveVariables("deployment", id, entry.variables);
    await client.query(
      `UPDATE builds SET furthest_stage = $1, furthest_position = $2
       WHERE id = $3 AND (furthest_position IS NULL OR furthest_position < $2)`,
      [entry.stageName, entry.stagePosition, build.id],
    );
    return id;
  };

  const nextSequence = async (draft: BuildDraft): Promise<number> => {
    const [scope] =
      draft.scheme === "unique"
        ? await read<{ n: number | null }>("SELECT max(sequence) AS n FROM builds WHERE application_id = $1", [
            draft.applicationId,
          ])
        : await read<{ n: number | null }>(
            "SELECT max(sequence) AS n FROM builds WHERE application_id = $1 AND COALESCE(release_id, 0) = $2",
            [draft.applicationId, draft.releaseId ?? 0],
          );
    return (scope?.n ?? 0) + 1;
  };

  return { read, by, lockApplication, saveVariables, reject, idsOf, enter, nextSequence };
}

/**
 * ReleaseRepository on PostgreSQL (cluster mode): the same rows, order, errors and lifecycle
 * events as on SQLite. Each multi-statement method is one transaction (see LOCK_APPLICATION).
 */
export function createPostgresReleaseRepository(db: PostgresDb): ReleaseRepository {
  const read: Read = <R extends pg.QueryResultRow>(sql: string, params: unknown[]) => readRows<R>(db, sql, params);
  const by = readsOn(read);

  return {
    listReleases: async (f) => {
      const w: Where = { clauses: [], params: [] };
      commonWhere(f, w);
      if (f.pipelineName !== undefined) add(w, (p) => `p.name_key = ${p}`, lower(f.pipelineName));
      if (f.status !== undefined) add(w, (p) => `r.status = ${p}`, f.status);
      return (await read<ReleaseRow>(`${RELEASE_SELECT}${whereOf(w)} ORDER BY r.id DESC`, w.params)).map(toRelease);
    },
    countActiveReleases: async (applicationId) => {
      const w: Where = { clauses: ["status = 'active'"], params: [] };
      if (applicationId !== undefined) add(w, (p) => `application_id = ${p}`, applicationId);
      // SQLite's GROUP BY answers in application_id order; PostgreSQL's hash aggregate in none.
      const rows = await read<{ application_id: number; n: number }>(
        `SELECT application_id, count(*) AS n FROM releases${whereOf(w)} GROUP BY application_id ORDER BY application_id`,
        w.params,
      );
      return new Map(rows.map((row) => [row.application_id, row.n]));
    },
    findRelease: async (id) => by.release(id),
    insertRelease: async (draft, actor) => {
      try {
        return await inTransaction(db, async (client) => {
          const t = writesOn(client);
          // Serializes the release sequence of the application (and a same-number insert, which
          // then fails on the unique key once the first has committed).
          await t.lockApplication(LOCK_APPLICATION.byId, draft.applicationId);
          const [max] = await t.read<{ n: number | null }>(
            "SELECT max(sequence) AS n FROM releases WHERE application_id = $1",
            [draft.applicationId],
          );
          const [inserted] = await t.read<{ id: number }>(
            `INSERT INTO releases (application_id, number, number_key, name, sequence, pipeline_id, status, template,
               created_by, created_on) VALUES ($1, $2, $3, $4, $5, $6, 'active', $7, $8, $9) RETURNING id`,
            [
              draft.applicationId,
              draft.number,
              lower(draft.number),
              draft.name,
              (max?.n ?? 0) + 1,
              draft.pipelineId ?? null,
              draft.template ?? null,
              actor.by,
              actor.now,
            ],
          );
          const id = (inserted as { id: number }).id;
          await t.saveVariables("release", id, draft.variables);
          return (await t.by.release(id)) as Release;
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw releaseExists(draft.number, error);
        throw error;
      }
    },
    cancelRelease: async (id, reason, actor) =>
      inTransaction(db, async (client) => {
        const t = writesOn(client);
        await t.lockApplication(LOCK_APPLICATION.ofRelease, id);
        await client.query(
          "UPDATE releases SET status = 'canceled', canceled_by = $1, canceled_on = $2, cancel_reason = $3 WHERE id = $4",
          [actor.by, actor.now, reason ?? null, id],
        );
        const builds = await t.idsOf("SELECT id FROM builds WHERE release_id = $1 AND status = 'active' ORDER BY id", [
          id,
        ]);
        await t.reject(builds, actor, REJECTED_BECAUSE.releaseCanceled);
        return (await t.by.release(id)) as Release;
      }),
    restoreRelease: async (id) =>
      inTransaction(db, async (client) => {
        const t = writesOn(client);
        await client.query(
          "UPDATE releases SET status = 'active', canceled_by = NULL, canceled_on = NULL, cancel_reason = NULL WHERE id = $1",
          [id],
        );
        return (await t.by.release(id)) as Release;
      }),

    listBuilds: async (f) => {
      const w: Where = { clauses: [], params: [] };
      commonWhere(f, w);
      if (f.pipelineName !== undefined) add(w, (p) => `p.name_key = ${p}`, lower(f.pipelineName));
      if (f.status !== undefined) add(w, (p) => `b.status = ${p}`, f.status);
      if (f.buildId !== undefined) add(w, (p) => `b.id = ${p}`, f.buildId);
      if (f.buildNumber !== undefined) add(w, (p) => `b.number_key = ${p}`, lower(f.buildNumber));
      if (f.furthestStage !== undefined) add(w, (p) => `lower(b.furthest_stage) = ${p}`, lower(f.furthestStage));
      for (const [name, value] of f.variables ?? []) {
        const nameKey = bind(w, lower(name));
        w.clauses.push(
          `EXISTS (SELECT 1 FROM release_variables v WHERE v.build_id = b.id AND v.name_key = ${nameKey} AND v.value = ${bind(w, value)})`,
        );
      }
      const where = whereOf(w);
      return (await read<BuildRow>(`${BUILD_SELECT}${where} ORDER BY b.id DESC${limitOf(f, w)}`, w.params)).map(
        toBuild,
      );
    },
    findBuild: async (id) => by.build(id),
    insertBuild: async (draft, firstStage, actor) => {
      try {
        return await inTransaction(db, async (client) => {
          const t = writesOn(client);
          // Serializes the build sequence of the application and the rejection of its previous
          // pipeline-less builds.
          await t.lockApplication(LOCK_APPLICATION.byId, draft.applicationId);
          const { number, stored } = buildNumberOf(draft, await t.nextSequence(draft), actor);
          if (draft.rejectPreviousPipelineLess) {
            const previous = await t.idsOf(
              "SELECT id FROM builds WHERE application_id = $1 AND pipeline_id IS NULL AND status = 'active' ORDER BY id",
              [draft.applicationId],
            );
            await t.reject(previous, systemActor(actor), REJECTED_BECAUSE.newerPipelineLess);
          }
          const [inserted] = await t.read<{ id: number }>(
            `INSERT INTO builds (application_id, release_id, pipeline_id, number, number_key, sequence, status, created_by, created_on)
             VALUES ($1, $2, $3, $4, $5, $6, 'active', $7, $8) RETURNING id`,
            [
              draft.applicationId,
              draft.releaseId ?? null,
              draft.pipelineId ?? null,
              number,
              lower(number),
              stored,
              actor.by,
              actor.now,
            ],
          );
          const id = (inserted as { id: number }).id;
          await t.saveVariables("build", id, draft.variables);
          const deployments = firstStage ? [await t.enter((await t.by.build(id)) as Build, firstStage, actor)] : [];
          const build = (await t.by.build(id)) as Build;
          const created: Deployment[] = [];
          for (const deployment of deployments) created.push((await t.by.deployment(deployment)) as Deployment);
          return { build, deployments: created };
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw buildExists(draft, error);
        throw error;
      }
    },
    enterStage: async (buildId, entry, actor) =>
      inTransaction(db, async (client) => {
        const t = writesOn(client);
        await t.lockApplication(LOCK_APPLICATION.ofBuild, buildId);
        const id = await t.enter((await t.by.build(buildId)) as Build, entry, actor);
        return (await t.by.deployment(id)) as Deployment;
      }),
    furthestSuccessfulPosition: async (buildId) =>
      (
        await read<{ n: number | null }>(
          "SELECT max(stage_position) AS n FROM deployments WHERE build_id = $1 AND status IN ('succeeded', 'warned')",
          [buildId],
        )
      )[0]?.n ?? undefined,
    rejectBuild: async (id, actor) =>
      inTransaction(db, async (client) => {
        const t = writesOn(client);
        await t.lockApplication(LOCK_APPLICATION.ofBuild, id);
        await t.reject([id], actor, REJECTED_BECAUSE.buildRejected);
        return (await t.by.build(id)) as Build;
      }),

    listDeployments: async (f) => {
      const w: Where = { clauses: [], params: [] };
      commonWhere(f, w);
      if (f.pipelineName !== undefined) add(w, (p) => `lower(d.pipeline_name) = ${p}`, lower(f.pipelineName));
      if (f.pipelineStageName !== undefined) add(w, (p) => `lower(d.stage_name) = ${p}`, lower(f.pipelineStageName));
      if (f.status !== undefined) add(w, (p) => `d.status = ${p}`, f.status);
      if (f.buildId !== undefined) add(w, (p) => `b.id = ${p}`, f.buildId);
      if (f.buildNumber !== undefined) add(w, (p) => `b.number_key = ${p}`, lower(f.buildNumber));
      if (f.deploymentId !== undefined) add(w, (p) => `d.id = ${p}`, f.deploymentId);
      if (f.environmentId !== undefined) add(w, (p) => `d.environment_id = ${p}`, f.environmentId);
      if (f.environmentName !== undefined) add(w, (p) => `lower(d.environment_name) = ${p}`, lower(f.environmentName));
      const where = whereOf(w);
      return (
        await read<DeploymentRow>(`${DEPLOYMENT_SELECT}${where} ORDER BY d.id DESC${limitOf(f, w)}`, w.params)
      ).map(toDeployment);
    },
    findDeployment: async (id) => by.deployment(id),
    pendingDeployments: async (now, limit) =>
      (
        await read<DeploymentRow>(
          `${DEPLOYMENT_SELECT} WHERE d.status = 'pending' AND (d.start_after IS NULL OR d.start_after <= $1) ORDER BY d.id LIMIT $2`,
          [now, limitAsOnSqlite(limit)],
        )
      ).map(toDeployment),
    unassignedDeployments: async (limit) =>
      (
        await read<DeploymentRow>(
          `${DEPLOYMENT_SELECT} WHERE d.status = 'pending' AND d.execution_id IS NULL ORDER BY d.id LIMIT $1`,
          [limitAsOnSqlite(limit)],
        )
      ).map(toDeployment),
    assignExecution: async (id, executionId) =>
      ((
        await writeRows(
          db,
          "UPDATE deployments SET execution_id = $1 WHERE id = $2 AND status = 'pending' AND execution_id IS NULL",
          [executionId, id],
        )
      ).rowCount ?? 0) > 0,
    startDeployment: async (id, executionId, now) =>
      ((
        await writeRows(
          db,
          `UPDATE deployments SET status = 'executing', started_at = $1, execution_id = COALESCE($2::bigint, execution_id)
           WHERE id = $3 AND status = 'pending' AND ($2::bigint IS NULL OR execution_id IS NULL OR execution_id = $2)`,
          [now, executionId ?? null, id],
        )
      ).rowCount ?? 0) > 0,
    finishDeployment: async (id, outcome, log, finalStage, now) =>
      inTransaction(db, async (client) => {
        const t = writesOn(client);
        await t.lockApplication(LOCK_APPLICATION.ofDeployment, id);
        const [ended] = await t.read<{ build_id: number }>(
          `UPDATE deployments SET status = $1, ended_at = $2, started_at = COALESCE(started_at, $2), log = log || $3
           WHERE id = $4 AND status IN ('pending', 'executing') RETURNING build_id`,
          [outcome, now, log, id],
        );
        if (!ended) return false;
        if (finalStage && outcome !== "failed") {
          const [build] = await t.read<{ release_id: number | null }>(
            "UPDATE builds SET status = 'deployed' WHERE id = $1 AND status = 'active' RETURNING release_id",
            [ended.build_id],
          );
          if (build?.release_id != null) {
            await client.query("UPDATE releases SET status = 'deployed' WHERE id = $1 AND status = 'active'", [
              build.release_id,
            ]);
          }
        }
        return true;
      }),
    variablesOf: async (owner, id) =>
      new Map(
        (
          await read<{ name: string; value: string }>(
            `SELECT name, value FROM release_variables WHERE ${owner}_id = $1 ORDER BY id`,
            [id],
          )
        ).map((v) => [v.name, v.value]),
      ),
  };
}
