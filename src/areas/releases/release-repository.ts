import type { Statement } from "better-sqlite3";
import { conflict } from "../../domain/errors.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import type { Build, BuildNumberScheme, Deployment, DeploymentOutcome, Release, Variables } from "./model.js";
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

/** Filters of the list methods: all AND-combined; names compared case-insensitively. */
export interface ReleaseFilter {
  applicationId?: number;
  applicationName?: string;
  releaseId?: number;
  releaseNumber?: string;
  releaseName?: string;
  pipelineName?: string;
  status?: string;
}
export interface BuildFilter extends ReleaseFilter {
  buildId?: number;
  buildNumber?: string;
  furthestStage?: string;
  /** `$Name=value` build variables (badges), matched case-insensitively by name, exactly by value. */
  variables?: Variables;
  limit?: number;
}
export interface DeploymentFilter extends Omit<BuildFilter, "furthestStage" | "variables"> {
  deploymentId?: number;
  pipelineStageName?: string;
  environmentId?: number;
  environmentName?: string;
}

/** A deployment about to be created: the stage it enters, copied from the pipeline. */
export interface StageEntry extends Pick<
  Deployment,
  | "pipelineName"
  | "stageName"
  | "stagePosition"
  | "planName"
  | "planSteps"
  | "environmentId"
  | "environmentName"
  | "forced"
  | "startAfter"
> {
  /** Reject older active builds of the same release that are in this stage (docs/compat.md 7.4). */
  readonly rejectOlder: boolean;
  readonly variables: Variables;
}

export interface BuildDraft {
  readonly applicationId: number;
  readonly releaseId?: number;
  readonly pipelineId?: number;
  /** Given by the caller, or chosen by the scheme. */
  readonly number?: string;
  readonly scheme: BuildNumberScheme;
  readonly variables: Variables;
  /** docs/compat.md 7.4: a new pipeline-less build rejects the application's previous pipeline-less ones. */
  readonly rejectPreviousPipelineLess: boolean;
}

export interface Actor {
  readonly by: string;
  readonly now: string;
}

/**
 * SQL for releases, builds, deployments and their variables (migration 0008). Every method is
 * one transaction and returns a Promise; the state rules of docs/compat.md 7.4 that touch several rows
 * (rejections, cancellations) happen inside the method that causes them.
 */
export interface ReleaseRepository {
  listReleases(filter: ReleaseFilter): Promise<Release[]>;
  /** Active releases per application id; applications without one are absent. */
  countActiveReleases(applicationId?: number): Promise<Map<number, number>>;
  findRelease(id: number): Promise<Release | undefined>;
  /** Throws conflict when the application already has that release number. */
  insertRelease(
    draft: {
      applicationId: number;
      number: string;
      name: string;
      pipelineId?: number;
      template?: string;
      variables: Variables;
    },
    actor: Actor,
  ): Promise<Release>;
  /** Cancels an active release: rejects its active builds and cancels their pending deployments. */
  cancelRelease(id: number, reason: string | undefined, actor: Actor): Promise<Release>;
  restoreRelease(id: number): Promise<Release>;

  listBuilds(filter: BuildFilter): Promise<Build[]>;
  findBuild(id: number): Promise<Build | undefined>;
  /** Inserts the build and, when `firstStage` is given, its first deployment. Conflict on a taken number. */
  insertBuild(
    draft: BuildDraft,
    firstStage: StageEntry | undefined,
    actor: Actor,
  ): Promise<{ build: Build; deployments: Deployment[] }>;
  /** Creates a pending deployment of the build to a stage, moving its furthest stage forward. */
  enterStage(buildId: number, entry: StageEntry, actor: Actor): Promise<Deployment>;
  /** The highest stage position the build was deployed to with success (or a warning); undefined if none. */
  furthestSuccessfulPosition(buildId: number): Promise<number | undefined>;
  /** Rejects the build and cancels its pending deployments. */
  rejectBuild(id: number, actor: Actor): Promise<Build>;

  listDeployments(filter: DeploymentFilter): Promise<Deployment[]>;
  findDeployment(id: number): Promise<Deployment | undefined>;
  /** Pending deployments whose start time has come, oldest first. */
  pendingDeployments(now: string, limit: number): Promise<Deployment[]>;
  /** Pending deployments without an execution yet, whatever their start time, oldest first. */
  unassignedDeployments(limit: number): Promise<Deployment[]>;
  /** Records the execution of a pending deployment that has none; false otherwise. */
  assignExecution(id: number, executionId: number): Promise<boolean>;
  /**
   * pending -> executing; false when it was not pending any more, or when `executionId` is given
   * and another execution was assigned to it.
   */
  startDeployment(id: number, executionId: number | undefined, now: string): Promise<boolean>;
  /**
   * Ends a pending or executing deployment. When it succeeded (or warned) in the final stage, the
   * build and its release become deployed. False when it had already ended.
   */
  finishDeployment(
    id: number,
    outcome: DeploymentOutcome,
    log: string,
    finalStage: boolean,
    now: string,
  ): Promise<boolean>;
  /** Variables of a release, build or deployment. */
  variablesOf(owner: "release" | "build" | "deployment", id: number): Promise<Map<string, string>>;
}

type Where = { clauses: string[]; params: unknown[] };

/** The shared pieces below are the same on both databases (release-repository-postgres.ts). */

export const lower = (s: string) => s.toLowerCase();

/** Why builds are rejected and their pending deployments canceled, as the deployments' logs say it. */
export const REJECTED_BECAUSE = {
  releaseCanceled: "release canceled",
  buildRejected: "build rejected",
  newerPipelineLess: "a newer pipeline-less build was created",
  enteredStage: (build: Build, entry: StageEntry) => `build ${build.number} entered stage ${entry.stageName}`,
} as const;

/** The line a canceled deployment's log gets. */
export const canceledLine = (why: string) => `Canceled: ${why}\n`;

/** Who rejects older builds: the server, at the time of the write that caused it. */
export const systemActor = (actor: Actor): Actor => ({ by: "SYSTEM", now: actor.now });

export const releaseExists = (number: string, cause: unknown) =>
  conflict("RELEASE_EXISTS", `The application already has a release numbered '${number}'.`, { cause });

export const buildExists = (draft: BuildDraft, cause: unknown) =>
  conflict("BUILD_EXISTS", `A build numbered '${draft.number ?? ""}' already exists.`, { cause });

/** A list's limit as bound: whole and not negative. */
export const boundLimit = (limit: number) => Math.max(0, Math.floor(limit));

/**
 * The number of a new build and the sequence stored with it, given the next sequence of its scope:
 * the caller's number (a numeric one moves the sequence up to it), else the scheme's.
 */
export function buildNumberOf(draft: BuildDraft, sequence: number, actor: Actor): { number: string; stored: number } {
  const given = draft.number;
  const number =
    given ??
    (draft.scheme === "date-based" ? `${actor.now.slice(0, 10).replaceAll("-", "")}.${sequence}` : String(sequence));
  const stored = given !== undefined && /^\d{1,9}$/.test(given) ? Math.max(sequence, Number(given)) : sequence;
  return { number, stored };
}

/** The values of a new deployment row (its status is 'pending'). */
export function deploymentParams(buildId: number, entry: StageEntry, actor: Actor) {
  return {
    buildId,
    pipelineName: entry.pipelineName,
    stageName: entry.stageName,
    stagePosition: entry.stagePosition,
    planName: entry.planName ?? null,
    planSteps: JSON.stringify(entry.planSteps),
    environmentId: entry.environmentId ?? null,
    environmentName: entry.environmentName ?? null,
    forced: entry.forced ? 1 : 0,
    startAfter: entry.startAfter ?? null,
    ...actor,
  };
}

/** The values of a variable row of one owner. */
export function variableParams(owner: "release" | "build" | "deployment", id: number, name: string, value: string) {
  return {
    release: owner === "release" ? id : null,
    build: owner === "build" ? id : null,
    deployment: owner === "deployment" ? id : null,
    name,
    nameKey: lower(name),
    value,
  };
}

function push(w: Where, clause: string, value: unknown): void {
  w.clauses.push(clause);
  w.params.push(value);
}

function commonWhere(f: ReleaseFilter, release: string, w: Where): void {
  const add = (clause: string, value: unknown) => push(w, clause, value);
  if (f.applicationId !== undefined) add("a.id = ?", f.applicationId);
  if (f.applicationName !== undefined) add("a.name_key = ?", lower(f.applicationName));
  if (f.releaseId !== undefined) add(`${release}.id = ?`, f.releaseId);
  if (f.releaseNumber !== undefined) add(`${release}.number_key = ?`, lower(f.releaseNumber));
  if (f.releaseName !== undefined) add(`lower(${release}.name) = ?`, lower(f.releaseName));
}

/**
 * Prepared statements kept per repository. The list methods build their SQL from the filters
 * given, so the distinct texts are many combinations (values and limits are bound, never pasted);
 * the ones in use fit easily, and the least recently used is dropped past this.
 */
const MAX_CACHED_STATEMENTS = 256;

/** ` LIMIT ?` with its value appended to the parameters (after the WHERE ones), or nothing. */
function limitOf(f: { limit?: number }, w: Where): string {
  if (f.limit === undefined) return "";
  w.params.push(boundLimit(f.limit));
  return " LIMIT ?";
}

export function createReleaseRepository(db: Db): ReleaseRepository {
  const cache = new Map<string, Statement>();
  const query = <R>(sql: string, params: unknown[]): R[] => {
    // A Map iterates in insertion order: moving a hit to the end keeps the least recent first.
    let statement = cache.get(sql);
    if (statement) cache.delete(sql);
    else {
      statement = db.prepare(sql);
      if (cache.size >= MAX_CACHED_STATEMENTS) cache.delete(cache.keys().next().value as string);
    }
    cache.set(sql, statement);
    return statement.all(...params) as R[];
  };
  const one = <R>(sql: string, params: unknown[]): R | undefined => query<R>(sql, params)[0];

  const releaseById = (id: number) => {
    const row = one<ReleaseRow>(`${RELEASE_SELECT} WHERE r.id = ?`, [id]);
    return row && toRelease(row);
  };
  const buildById = (id: number) => {
    const row = one<BuildRow>(`${BUILD_SELECT} WHERE b.id = ?`, [id]);
    return row && toBuild(row);
  };
  const deploymentById = (id: number) => {
    const row = one<DeploymentRow>(`${DEPLOYMENT_SELECT} WHERE d.id = ?`, [id]);
    return row && toDeployment(row);
  };

  const insertVariable = db.prepare(
    `INSERT INTO release_variables (release_id, build_id, deployment_id, name, name_key, value)
     VALUES (@release, @build, @deployment, @name, @nameKey, @value)`,
  );
  const saveVariables = (owner: "release" | "build" | "deployment", id: number, variables: Variables) => {
    for (const [name, value] of variables) insertVariable.run(variableParams(owner, id, name, value));
  };

  const cancelPending = db.prepare(
    `UPDATE deployments SET status = 'failed', canceled_by = @by, canceled_on = @now, ended_at = @now,
       log = log || @line WHERE build_id = @buildId AND status = 'pending'`,
  );
  const rejectOne = db.prepare(
    "UPDATE builds SET status = 'rejected', rejected_by = @by, rejected_on = @now WHERE id = @id AND status != 'rejected'",
  );
  const reject = (buildIds: readonly number[], actor: Actor, why: string) => {
    for (const id of buildIds) {
      rejectOne.run({ id, ...actor });
      cancelPending.run({ buildId: id, ...actor, line: canceledLine(why) });
    }
  };

  const insertDeployment = db.prepare(
    `INSERT INTO deployments (build_id, pipeline_name, stage_name, stage_position, plan_name, plan_steps, environment_id,
       environment_name, status, forced, start_after, created_by, created_on)
     VALUES (@buildId, @pipelineName, @stageName, @stagePosition, @planName, @planSteps, @environmentId, @environmentName,
       'pending', @forced, @startAfter, @by, @now)`,
  );
  const enter = (build: Build, entry: StageEntry, actor: Actor): number => {
    if (entry.rejectOlder && build.releaseId !== undefined) {
      const older = query<{ id: number }>(
        "SELECT id FROM builds WHERE release_id = ? AND id < ? AND status = 'active' AND furthest_position = ?",
        [build.releaseId, build.id, entry.stagePosition],
      ).map((r) => r.id);
      reject(older, systemActor(actor), REJECTED_BECAUSE.enteredStage(build, entry));
    }
    const id = Number(insertDeployment.run(deploymentParams(build.id, entry, actor)).lastInsertRowid);
    saveVariables("deployment", id, entry.variables);
    query(
      `UPDATE builds SET furthest_stage = ?, furthest_position = ?
       WHERE id = ? AND (furthest_position IS NULL OR furthest_position < ?) RETURNING id`,
      [entry.stageName, entry.stagePosition, build.id, entry.stagePosition],
    );
    return id;
  };

  const insertReleaseRow = db.prepare(
    `INSERT INTO releases (application_id, number, number_key, name, sequence, pipeline_id, status, template,
       created_by, created_on) VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?)`,
  );
  const insertBuildRow = db.prepare(
    `INSERT INTO builds (application_id, release_id, pipeline_id, number, number_key, sequence, status, created_by, created_on)
     VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)`,
  );

  const nextSequence = (draft: BuildDraft): number => {
    const scope =
      draft.scheme === "unique"
        ? one<{ n: number | null }>("SELECT max(sequence) AS n FROM builds WHERE application_id = ?", [
            draft.applicationId,
          ])
        : one<{ n: number | null }>(
            "SELECT max(sequence) AS n FROM builds WHERE application_id = ? AND COALESCE(release_id, 0) = ?",
            [draft.applicationId, draft.releaseId ?? 0],
          );
    return (scope?.n ?? 0) + 1;
  };

  return withBusyRetries(db, {
    listReleases: async (f) => {
      const w: Where = { clauses: [], params: [] };
      commonWhere(f, "r", w);
      if (f.pipelineName !== undefined) push(w, "p.name_key = ?", lower(f.pipelineName));
      if (f.status !== undefined) push(w, "r.status = ?", f.status);
      const where = w.clauses.length ? ` WHERE ${w.clauses.join(" AND ")}` : "";
      // Ids grow with creation: newest first across applications too (sequence counts per application).
      return query<ReleaseRow>(`${RELEASE_SELECT}${where} ORDER BY r.id DESC`, w.params).map(toRelease);
    },
    countActiveReleases: async (applicationId) => {
      const w: Where = { clauses: ["status = 'active'"], params: [] };
      if (applicationId !== undefined) push(w, "application_id = ?", applicationId);
      const rows = query<{ application_id: number; n: number }>(
        `SELECT application_id, count(*) AS n FROM releases WHERE ${w.clauses.join(" AND ")} GROUP BY application_id`,
        w.params,
      );
      return new Map(rows.map((row) => [row.application_id, row.n]));
    },
    findRelease: async (id) => releaseById(id),
    insertRelease: async (draft, actor) => {
      try {
        return db.transaction(() => {
          const sequence =
            (one<{ n: number | null }>("SELECT max(sequence) AS n FROM releases WHERE application_id = ?", [
              draft.applicationId,
            ])?.n ?? 0) + 1;
          const id = Number(
            insertReleaseRow.run(
              draft.applicationId,
              draft.number,
              lower(draft.number),
              draft.name,
              sequence,
              draft.pipelineId ?? null,
              draft.template ?? null,
              actor.by,
              actor.now,
            ).lastInsertRowid,
          );
          saveVariables("release", id, draft.variables);
          return releaseById(id) as Release;
        })();
      } catch (error) {
        if (isUniqueViolation(error)) throw releaseExists(draft.number, error);
        throw error;
      }
    },
    cancelRelease: async (id, reason, actor) =>
      db.transaction(() => {
        query(
          "UPDATE releases SET status = 'canceled', canceled_by = ?, canceled_on = ?, cancel_reason = ? WHERE id = ? RETURNING id",
          [actor.by, actor.now, reason ?? null, id],
        );
        const builds = query<{ id: number }>("SELECT id FROM builds WHERE release_id = ? AND status = 'active'", [id]);
        reject(
          builds.map((b) => b.id),
          actor,
          REJECTED_BECAUSE.releaseCanceled,
        );
        return releaseById(id) as Release;
      })(),
    restoreRelease: async (id) => {
      query(
        "UPDATE releases SET status = 'active', canceled_by = NULL, canceled_on = NULL, cancel_reason = NULL WHERE id = ? RETURNING id",
        [id],
      );
      return releaseById(id) as Release;
    },

    listBuilds: async (f) => {
      const w: Where = { clauses: [], params: [] };
      commonWhere(f, "r", w);
      const add = (clause: string, value: unknown) => push(w, clause, value);
      if (f.pipelineName !== undefined) add("p.name_key = ?", lower(f.pipelineName));
      if (f.status !== undefined) add("b.status = ?", f.status);
      if (f.buildId !== undefined) add("b.id = ?", f.buildId);
      if (f.buildNumber !== undefined) add("b.number_key = ?", lower(f.buildNumber));
      if (f.furthestStage !== undefined) add("lower(b.furthest_stage) = ?", lower(f.furthestStage));
      for (const [name, value] of f.variables ?? []) {
        w.clauses.push(
          "EXISTS (SELECT 1 FROM release_variables v WHERE v.build_id = b.id AND v.name_key = ? AND v.value = ?)",
        );
        w.params.push(lower(name), value);
      }
      const where = w.clauses.length ? ` WHERE ${w.clauses.join(" AND ")}` : "";
      return query<BuildRow>(`${BUILD_SELECT}${where} ORDER BY b.id DESC${limitOf(f, w)}`, w.params).map(toBuild);
    },
    findBuild: async (id) => buildById(id),
    insertBuild: async (draft, firstStage, actor) => {
      try {
        return db.transaction(() => {
          const { number, stored } = buildNumberOf(draft, nextSequence(draft), actor);
          if (draft.rejectPreviousPipelineLess) {
            const previous = query<{ id: number }>(
              "SELECT id FROM builds WHERE application_id = ? AND pipeline_id IS NULL AND status = 'active'",
              [draft.applicationId],
            );
            reject(
              previous.map((b) => b.id),
              systemActor(actor),
              REJECTED_BECAUSE.newerPipelineLess,
            );
          }
          const id = Number(
            insertBuildRow.run(
              draft.applicationId,
              draft.releaseId ?? null,
              draft.pipelineId ?? null,
              number,
              lower(number),
              stored,
              actor.by,
              actor.now,
            ).lastInsertRowid,
          );
          saveVariables("build", id, draft.variables);
          const deployments = firstStage ? [enter(buildById(id) as Build, firstStage, actor)] : [];
          return {
            build: buildById(id) as Build,
            deployments: deployments.map((d) => deploymentById(d) as Deployment),
          };
        })();
      } catch (error) {
        if (isUniqueViolation(error)) throw buildExists(draft, error);
        throw error;
      }
    },
    enterStage: async (buildId, entry, actor) =>
      db.transaction(() => deploymentById(enter(buildById(buildId) as Build, entry, actor)) as Deployment)(),
    furthestSuccessfulPosition: async (buildId) =>
      one<{ n: number | null }>(
        "SELECT max(stage_position) AS n FROM deployments WHERE build_id = ? AND status IN ('succeeded', 'warned')",
        [buildId],
      )?.n ?? undefined,
    rejectBuild: async (id, actor) =>
      db.transaction(() => {
        reject([id], actor, REJECTED_BECAUSE.buildRejected);
        return buildById(id) as Build;
      })(),

    listDeployments: async (f) => {
      const w: Where = { clauses: [], params: [] };
      commonWhere(f, "r", w);
      const add = (clause: string, value: unknown) => push(w, clause, value);
      if (f.pipelineName !== undefined) add("lower(d.pipeline_name) = ?", lower(f.pipelineName));
      if (f.pipelineStageName !== undefined) add("lower(d.stage_name) = ?", lower(f.pipelineStageName));
      if (f.status !== undefined) add("d.status = ?", f.status);
      if (f.buildId !== undefined) add("b.id = ?", f.buildId);
      if (f.buildNumber !== undefined) add("b.number_key = ?", lower(f.buildNumber));
      if (f.deploymentId !== undefined) add("d.id = ?", f.deploymentId);
      if (f.environmentId !== undefined) add("d.environment_id = ?", f.environmentId);
      if (f.environmentName !== undefined) add("lower(d.environment_name) = ?", lower(f.environmentName));
      const where = w.clauses.length ? ` WHERE ${w.clauses.join(" AND ")}` : "";
      return query<DeploymentRow>(`${DEPLOYMENT_SELECT}${where} ORDER BY d.id DESC${limitOf(f, w)}`, w.params).map(
        toDeployment,
      );
    },
    findDeployment: async (id) => deploymentById(id),
    pendingDeployments: async (now, limit) =>
      query<DeploymentRow>(
        `${DEPLOYMENT_SELECT} WHERE d.status = 'pending' AND (d.start_after IS NULL OR d.start_after <= ?) ORDER BY d.id LIMIT ?`,
        [now, limit],
      ).map(toDeployment),
    unassignedDeployments: async (limit) =>
      query<DeploymentRow>(
        `${DEPLOYMENT_SELECT} WHERE d.status = 'pending' AND d.execution_id IS NULL ORDER BY d.id LIMIT ?`,
        [limit],
      ).map(toDeployment),
    assignExecution: async (id, executionId) =>
      query(
        "UPDATE deployments SET execution_id = ? WHERE id = ? AND status = 'pending' AND execution_id IS NULL RETURNING id",
        [executionId, id],
      ).length > 0,
    startDeployment: async (id, executionId, now) =>
      query(
        `UPDATE deployments SET status = 'executing', started_at = ?, execution_id = COALESCE(?, execution_id)
         WHERE id = ? AND status = 'pending' AND (? IS NULL OR execution_id IS NULL OR execution_id = ?) RETURNING id`,
        [now, executionId ?? null, id, executionId ?? null, executionId ?? null],
      ).length > 0,
    finishDeployment: async (id, outcome, log, finalStage, now) =>
      db.transaction(() => {
        const ended = query<{ build_id: number }>(
          `UPDATE deployments SET status = ?, ended_at = ?, started_at = COALESCE(started_at, ?), log = log || ?
           WHERE id = ? AND status IN ('pending', 'executing') RETURNING build_id`,
          [outcome, now, now, log, id],
        )[0];
        if (!ended) return false;
        if (finalStage && outcome !== "failed") {
          const build = query<{ release_id: number | null }>(
            "UPDATE builds SET status = 'deployed' WHERE id = ? AND status = 'active' RETURNING release_id",
            [ended.build_id],
          )[0];
          if (build?.release_id != null) {
            query("UPDATE releases SET status = 'deployed' WHERE id = ? AND status = 'active' RETURNING id", [
              build.release_id,
            ]);
          }
        }
        return true;
      })(),
    variablesOf: async (owner, id) =>
      new Map(
        query<{ name: string; value: string }>(
          `SELECT name, value FROM release_variables WHERE ${owner}_id = ? ORDER BY id`,
          [id],
        ).map((v) => [v.name, v.value]),
      ),
  });
}
