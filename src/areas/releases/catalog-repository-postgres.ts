import type pg from "pg";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../storage/sqlite-errors.js";
import {
  applicationNotFound,
  applicationParams,
  type ApplicationRow,
  type CatalogRepository,
  ENVIRONMENT_SELECT,
  environmentParams,
  type EnvironmentRow,
  key,
  nameTaken,
  parentIsSelf,
  parentNotFound,
  pipelineInUse,
  pipelinesUsing,
  planInUse,
  PLAN_USERS_SELECT,
  type PlanRow,
  stageParams,
  type PipelineRow,
  type StageRow,
  toApplication,
  toEnvironment,
  toPipeline,
  toPlan,
} from "./catalog-repository.js";
import type { EnvironmentDraft, Pipeline, PipelineStage } from "./model.js";

/** A pipeline with its stages in position order, read in one statement (one snapshot). */
interface PipelineWithStagesRow extends PipelineRow {
  stages: StageRow[];
}

const PIPELINE_SELECT = `SELECT p.id, p.name, p.reject_older_builds,
    COALESCE((SELECT json_agg(json_build_object('name', s.name, 'environment_name', s.environment_name,
                'plan_name', s.plan_name, 'plan_steps', s.plan_steps) ORDER BY s.position)
       FROM pipeline_stages s WHERE s.pipeline_id = p.id), '[]'::json) AS stages
  FROM pipelines p`;

const readPipeline = (row: PipelineWithStagesRow | undefined): Pipeline | undefined =>
  row && toPipeline(row, row.stages);

/** A unique violation (a name taken, by a concurrent writer too) as the API's conflict. */
async function unique<T>(what: string, name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw nameTaken(what, name, error);
    throw error;
  }
}

/**
 * CatalogRepository on PostgreSQL (cluster mode): the same rows, order and errors as on SQLite.
 * Names are compared through their lowercased *_key columns, as there.
 */
export function createPostgresCatalogRepository(db: PostgresDb): CatalogRepository {
  const writeStages = async (client: pg.PoolClient, pipelineId: number, stages: readonly PipelineStage[]) => {
    await client.query("DELETE FROM pipeline_stages WHERE pipeline_id = $1", [pipelineId]);
    for (const [position, stage] of stages.entries()) {
      const p = stageParams(pipelineId, stage, position);
      await client.query(
        `INSERT INTO pipeline_stages (pipeline_id, position, name, name_key, environment_name, plan_name, plan_steps)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [p.pipelineId, p.position, p.name, p.nameKey, p.environmentName, p.planName, p.planSteps],
      );
    }
  };
  /**
   * The parent's id, held with FOR KEY SHARE until commit: a concurrent delete of the parent waits
   * for this write (and then sets its parent_id to NULL, as it would after it on SQLite).
   */
  const parentId = async (client: pg.PoolClient, draft: EnvironmentDraft): Promise<number | null> => {
    if (draft.parentName === undefined) return null;
    const { rows } = await client.query<{ id: number }>(
      "SELECT id FROM environments WHERE name_key = $1 FOR KEY SHARE",
      [key(draft.parentName)],
    );
    const parent = rows[0];
    if (!parent) throw parentNotFound(draft.parentName);
    return parent.id;
  };
  const environmentById = async (client: pg.PoolClient, id: number) =>
    (await client.query<EnvironmentRow>(`${ENVIRONMENT_SELECT} WHERE e.id = $1`, [id])).rows[0];

  return {
    listApplications: async () =>
      (await readRows<ApplicationRow>(db, "SELECT * FROM applications ORDER BY name_key")).map(toApplication),
    findApplication: async (idOrName) => {
      const [row] =
        typeof idOrName === "number"
          ? await readRows<ApplicationRow>(db, "SELECT * FROM applications WHERE id = $1", [idOrName])
          : await readRows<ApplicationRow>(db, "SELECT * FROM applications WHERE name_key = $1", [key(idOrName)]);
      return row && toApplication(row);
    },
    insertApplication: async (draft, now) =>
      unique("application", draft.name, async () => {
        const p = applicationParams(draft);
        const { rows } = await writeRows<{ id: number }>(
          db,
          `INSERT INTO applications (name, name_key, description, group_name, active, release_usage, build_number_scheme, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
          [p.name, p.nameKey, p.description, p.groupName, p.active, p.releaseUsage, p.buildNumberScheme, now],
        );
        return { id: (rows[0] as { id: number }).id, ...draft };
      }),
    updateApplication: async (id, draft) =>
      unique("application", draft.name, async () => {
        const p = applicationParams(draft);
        const { rowCount } = await writeRows(
          db,
          `UPDATE applications SET name = $1, name_key = $2, description = $3, group_name = $4,
             active = $5, release_usage = $6, build_number_scheme = $7 WHERE id = $8`,
          [p.name, p.nameKey, p.description, p.groupName, p.active, p.releaseUsage, p.buildNumberScheme, id],
        );
        if (rowCount === 0) throw applicationNotFound(id);
        return { id, ...draft };
      }),

    listEnvironments: async () =>
      (await readRows<EnvironmentRow>(db, `${ENVIRONMENT_SELECT} ORDER BY e.name_key`)).map(toEnvironment),
    findEnvironment: async (name) => {
      const [row] = await readRows<EnvironmentRow>(db, `${ENVIRONMENT_SELECT} WHERE e.name_key = $1`, [key(name)]);
      return row && toEnvironment(row);
    },
    insertEnvironment: async (draft) =>
      unique("environment", draft.name, () =>
        inTransaction(db, async (client) => {
          const p = environmentParams(draft, await parentId(client, draft));
          const { rows } = await client.query<{ id: number }>(
            "INSERT INTO environments (name, name_key, parent_id, active, variables) VALUES ($1, $2, $3, $4, $5) RETURNING id",
            [p.name, p.nameKey, p.parentId, p.active, p.variables],
          );
          return toEnvironment((await environmentById(client, (rows[0] as { id: number }).id)) as EnvironmentRow);
        }),
      ),
    updateEnvironment: async (id, draft) =>
      unique("environment", draft.name, () =>
        inTransaction(db, async (client) => {
          if (draft.parentName !== undefined) {
            // The environment and its parent, locked in id order: two updates that each make the
            // other environment their parent (and rename) wait for each other instead of deadlocking.
            await client.query("SELECT id FROM environments WHERE id = $1 OR name_key = $2 ORDER BY id FOR UPDATE", [
              id,
              key(draft.parentName),
            ]);
          }
          const p = environmentParams(draft, await parentId(client, draft));
          if (p.parentId === id) throw parentIsSelf();
          await client.query(
            "UPDATE environments SET name = $1, name_key = $2, parent_id = $3, active = $4, variables = $5 WHERE id = $6",
            [p.name, p.nameKey, p.parentId, p.active, p.variables, id],
          );
          // As on SQLite, an unknown id is not looked for: toEnvironment fails on the missing row.
          return toEnvironment((await environmentById(client, id)) as EnvironmentRow);
        }),
      ),
    deleteEnvironment: async (name) =>
      ((await writeRows(db, "DELETE FROM environments WHERE name_key = $1", [key(name)])).rowCount ?? 0) > 0,

    listPlans: async () =>
      (await readRows<PlanRow>(db, "SELECT id, name, steps FROM deployment_plans ORDER BY name_key")).map(toPlan),
    findPlan: async (name) => {
      const [row] = await readRows<PlanRow>(db, "SELECT id, name, steps FROM deployment_plans WHERE name_key = $1", [
        key(name),
      ]);
      return row && toPlan(row);
    },
    insertPlan: async (name, steps, now) =>
      unique("plan", name, async () => {
        const { rows } = await writeRows<{ id: number }>(
          db,
          "INSERT INTO deployment_plans (name, name_key, steps, created_at, modified_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
          [name, key(name), JSON.stringify(steps), now],
        );
        return { id: (rows[0] as { id: number }).id, name, steps };
      }),
    updatePlan: async (name, steps, now) => {
      const [row] = (
        await writeRows<{ id: number; name: string }>(
          db,
          "UPDATE deployment_plans SET steps = $1, modified_at = $2 WHERE name_key = $3 RETURNING id, name",
          [JSON.stringify(steps), now, key(name)],
        )
      ).rows;
      return row && { id: row.id, name: row.name, steps };
    },
    deletePlan: async (name) =>
      inTransaction(db, async (client) => {
        // No lock needed: a stage that names the plan and commits after this read is the order
        // "plan deleted, then the pipeline written", which SQLite allows too (stages name plans
        // as typed, and writing a pipeline reads no plan).
        const users = pipelinesUsing(
          (await client.query<{ pipeline: string; plan_name: string }>(PLAN_USERS_SELECT)).rows,
          name,
        );
        if (users.length > 0) throw planInUse(name, users);
        return (
          ((await client.query("DELETE FROM deployment_plans WHERE name_key = $1", [key(name)])).rowCount ?? 0) > 0
        );
      }),

    listPipelines: async () =>
      (await readRows<PipelineWithStagesRow>(db, `${PIPELINE_SELECT} ORDER BY p.name_key`)).map(
        (row) => readPipeline(row) as Pipeline,
      ),
    findPipeline: async (idOrName) =>
      readPipeline(
        typeof idOrName === "number"
          ? (await readRows<PipelineWithStagesRow>(db, `${PIPELINE_SELECT} WHERE p.id = $1`, [idOrName]))[0]
          : (await readRows<PipelineWithStagesRow>(db, `${PIPELINE_SELECT} WHERE p.name_key = $1`, [key(idOrName)]))[0],
      ),
    insertPipeline: async (draft, now) =>
      unique("pipeline", draft.name, () =>
        inTransaction(db, async (client) => {
          const { rows } = await client.query<{ id: number }>(
            "INSERT INTO pipelines (name, name_key, reject_older_builds, created_at, modified_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
            [draft.name, key(draft.name), draft.rejectOlderBuilds ? 1 : 0, now],
          );
          const id = (rows[0] as { id: number }).id;
          await writeStages(client, id, draft.stages);
          return { id, ...draft };
        }),
      ),
    updatePipeline: async (id, draft, now) =>
      unique("pipeline", draft.name, () =>
        inTransaction(db, async (client) => {
          // The row lock this UPDATE takes makes a concurrent update of the same pipeline wait
          // before it replaces the stages: the stages are always one update's.
          await client.query(
            "UPDATE pipelines SET name = $1, name_key = $2, reject_older_builds = $3, modified_at = $4 WHERE id = $5",
            [draft.name, key(draft.name), draft.rejectOlderBuilds ? 1 : 0, now, id],
          );
          await writeStages(client, id, draft.stages);
          return { id, ...draft };
        }),
      ),
    deletePipeline: async (name) => {
      try {
        return ((await writeRows(db, "DELETE FROM pipelines WHERE name_key = $1", [key(name)])).rowCount ?? 0) > 0;
      } catch (error) {
        if (isForeignKeyViolation(error)) throw pipelineInUse(name, error);
        throw error;
      }
    },
  };
}
