import path from "node:path";
import Database from "better-sqlite3";
import type { ScenarioContext } from "./scenarios.js";

/**
 * Data for the CI badge scenario: applications, a pipeline, environments and releases through
 * the management and release APIs (so that they are exactly what Wharf writes), then builds, their
 * `$Branch` variables and their deployments straight into the server's database in one
 * transaction (10,000 builds through `/api/releases/builds/create` would also start 10,000
 * deployments on the job runner). Every seeded deployment has ended, so the runner has nothing to
 * do while the scenario measures.
 */

const DB_FILE = "wharf.sqlite";
export const STAGES = ["Integration", "Testing", "Production"] as const;
export const PIPELINE = "bench-badges-pipeline";
export const RELEASES_PER_APPLICATION = 2;

export interface BadgeSeed {
  readonly applications: readonly string[];
  /** The newest build of each application: its release and number. */
  readonly newest: ReadonlyMap<string, { releaseNumber: string; buildNumber: string }>;
  readonly builds: number;
  readonly variables: number;
  readonly deployments: number;
  readonly seedMs: number;
}

async function post(ctx: ScenarioContext, url: string, body: unknown, expected: number): Promise<unknown> {
  const res = await fetch(`${ctx.url}${url}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-ApiKey": ctx.adminKey },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== expected) throw new Error(`POST ${url} answered ${res.status}: ${text.slice(0, 200)}`);
  return text === "" ? undefined : JSON.parse(text);
}

/** A System key with only the `ci-badges` scope, as a README badge would carry. */
export async function createBadgeKey(ctx: ScenarioContext): Promise<string> {
  const body = (await post(
    ctx,
    "/api/api-keys/create",
    { type: "System", systemApis: ["ci-badges"], displayName: "bench badges" },
    201,
  )) as { key?: string };
  if (body.key === undefined) throw new Error("the API-key API answered no key");
  return body.key;
}

/**
 * The `$Branch` of an application's `index`-th build (0-based), or none for a third of them:
 * mostly `main` (always the newest build: a README badge of the default branch), every tenth a
 * `feature/<n>` branch, and `hotfix/old` on one early build only, so that a badge for it has to
 * look past almost all of the application's builds.
 */
export function branchOf(index: number, perApplication: number): string | undefined {
  if (index === perApplication - 1) return "main";
  if (index === 3) return "hotfix/old";
  if (index % 3 === 2) return undefined;
  if (index % 10 === 7) return `feature/${Math.floor(index / 10) % 40}`;
  return "main";
}

/**
 * `totalBuilds` builds spread round-robin over `applications` applications (ids interleave, as
 * when several projects build at once), each application's builds split over its releases.
 */
export async function seedBadgeData(
  ctx: ScenarioContext,
  options: { applications: number; totalBuilds: number },
): Promise<BadgeSeed> {
  const started = Date.now();
  for (const name of STAGES) await post(ctx, `/api/infrastructure/environments/create/${name}`, {}, 201);
  await post(
    ctx,
    "/api/pipelines/create",
    {
      name: PIPELINE,
      rejectOlderBuilds: true,
      stages: STAGES.map((name) => ({
        name,
        environmentName: name,
        plan: [{ type: "log", message: `deploying to ${name}` }],
      })),
    },
    200,
  );
  const applications: { id: number; name: string; releases: { id: number; number: string }[] }[] = [];
  for (let a = 0; a < options.applications; a++) {
    const name = `bench-app-${String(a).padStart(2, "0")}`;
    const app = (await post(ctx, "/api/applications/create", { name, releaseUsage: "Required" }, 200)) as {
      id: number;
    };
    const releases: { id: number; number: string }[] = [];
    for (let r = 1; r <= RELEASES_PER_APPLICATION; r++) {
      const number = `${r}.0`;
      const release = (await post(
        ctx,
        "/api/releases/create",
        { applicationId: app.id, releaseNumber: number, pipelineName: PIPELINE },
        200,
      )) as { id: number };
      releases.push({ id: release.id, number });
    }
    applications.push({ id: app.id, name, releases });
  }
  const apiMs = Date.now() - started;

  const perApplication = Math.ceil(options.totalBuilds / options.applications);
  const perRelease = Math.ceil(perApplication / RELEASES_PER_APPLICATION);
  const newest = new Map<string, { releaseNumber: string; buildNumber: string }>();
  let builds = 0;
  let variables = 0;
  let deployments = 0;
  const db = new Database(path.join(ctx.dataDir, DB_FILE));
  try {
    db.pragma("busy_timeout = 10000");
    const pipelineId = (
      db.prepare("SELECT id FROM pipelines WHERE name_key = ?").get(PIPELINE.toLowerCase()) as { id: number }
    ).id;
    const environmentIds = STAGES.map(
      (name) =>
        (db.prepare("SELECT id FROM environments WHERE name_key = ?").get(name.toLowerCase()) as { id: number }).id,
    );
    const insertBuild = db.prepare(
      `INSERT INTO builds (application_id, release_id, pipeline_id, number, number_key, sequence, status,
         furthest_stage, furthest_position, created_by, created_on)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'bench', ?)`,
    );
    const insertVariable = db.prepare(
      "INSERT INTO release_variables (build_id, name, name_key, value) VALUES (?, 'Branch', 'branch', ?)",
    );
    const insertDeployment = db.prepare(
      `INSERT INTO deployments (build_id, pipeline_name, stage_name, stage_position, plan_steps, environment_id,
         environment_name, status, started_at, ended_at, created_by, created_on, log)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'bench', ?, ?)`,
    );
    const base = Date.now() - options.totalBuilds * 60_000;
    db.transaction(() => {
      for (let index = 0; index < perApplication; index++) {
        for (const app of applications) {
          if (builds >= options.totalBuilds) return;
          const releaseIndex = Math.min(Math.floor(index / perRelease), app.releases.length - 1);
          const release = app.releases[releaseIndex] as { id: number; number: string };
          const sequence = index - releaseIndex * perRelease + 1;
          const number = String(sequence);
          // how far it went: most builds reach Testing, every 5th Production, every 7th failed in Integration
          const failed = index % 7 === 6;
          const furthest = failed ? 0 : index % 5 === 0 ? 2 : 1;
          const last = index === perApplication - 1;
          const status = last ? "active" : furthest === 2 ? "deployed" : "rejected";
          const when = new Date(base + builds * 60_000).toISOString();
          const stage = STAGES[furthest] as string;
          const buildId = Number(
            insertBuild.run(app.id, release.id, pipelineId, number, number, sequence, status, stage, furthest, when)
              .lastInsertRowid,
          );
          builds++;
          const branch = branchOf(index, perApplication);
          if (branch !== undefined) {
            insertVariable.run(buildId, branch);
            variables++;
          }
          for (let position = 0; position <= furthest; position++) {
            const outcome = failed ? "failed" : index % 11 === 4 && position === furthest ? "warned" : "succeeded";
            const name = STAGES[position] as string;
            insertDeployment.run(
              buildId,
              PIPELINE,
              name,
              position,
              JSON.stringify([{ type: "log", message: `deploying to ${name}` }]),
              environmentIds[position] as number,
              name,
              outcome,
              when,
              when,
              when,
              `deploying to ${name}\n`,
            );
            deployments++;
          }
          if (last) newest.set(app.name, { releaseNumber: release.number, buildNumber: number });
        }
      }
    }).immediate();
  } finally {
    db.close();
  }
  const seedMs = Date.now() - started;
  ctx.log(
    `seeded ${applications.length} applications (${apiMs} ms through the API), ${builds} builds, ${variables} ` +
      `$Branch variables and ${deployments} deployments in ${seedMs} ms`,
  );
  return { applications: applications.map((a) => a.name), newest, builds, variables, deployments, seedMs };
}
