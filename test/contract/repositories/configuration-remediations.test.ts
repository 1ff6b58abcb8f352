import { beforeAll, expect, it } from "vitest";
import {
  createRemediationRepository,
  type RemediationRepository,
} from "../../../src/areas/configuration/remediation-repository.js";
import { createPostgresRemediationRepository } from "../../../src/areas/configuration/remediation-repository-postgres.js";
import {
  createRemediationJobs,
  RECENT_JOBS,
  type RemediationJobs,
} from "../../../src/areas/web-ui/configuration/remediation-jobs.js";
import { createPostgresRemediationJobs } from "../../../src/areas/web-ui/configuration/remediation-jobs-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { insertServer } from "../../helpers/seed-rows.js";

/**
 * Remediation jobs' own rows (remediation-repository.ts) and the configuration pages' job lists
 * (web-ui/configuration/remediation-jobs.ts) on both databases: what a job was asked for, the
 * servers it covers, which are open per server, and the pages' newest-first lists.
 */
const T1 = "2026-11-29T10:00:00.000Z";
const T2 = "2026-11-29T10:01:00.000Z";
const T3 = "2026-11-29T10:02:00.000Z";

const on = (database: TestDatabase): { remediations: RemediationRepository; jobs: RemediationJobs } =>
  database.kind === "sqlite"
    ? { remediations: createRemediationRepository(database.sqlite), jobs: createRemediationJobs(database.sqlite) }
    : {
        remediations: createPostgresRemediationRepository(database.postgres),
        jobs: createPostgresRemediationJobs(database.postgres),
      };

describeOnBothDatabases("Configuration remediation jobs (repository and pages)", (database) => {
  let remediations: RemediationRepository;
  let jobs: RemediationJobs;
  let web: number;
  let db: number;
  let roleId: number;

  const job = async (status: string, createdAt: string, notBefore: string | null = null) =>
    Number(
      (
        await database().exec(
          "INSERT INTO jobs (kind, payload, status, created_at, not_before) VALUES ('configuration.remediate', '{}', ?, ?, ?) RETURNING id",
          [status, createdAt, notBefore],
        )
      )[0]?.id,
    );

  beforeAll(async () => {
    ({ remediations, jobs } = on(database()));
    web = await insertServer(database().exec, "web", T1, { type: "local" });
    db = await insertServer(database().exec, "db", T1, { type: "local" });
    roleId = Number(
      (
        await database().exec(
          "INSERT INTO roles (name, name_key, variables, created_at, modified_at) VALUES ('Base', 'base', '{}', ?, ?) RETURNING id",
          [T1, T1],
        )
      )[0]?.id,
    );
  });

  it("records a job with its servers (a server given twice kept once, the first), finds it, lists it open", async () => {
    const jobId = await job("pending", T1, T3);
    await remediations.record(
      { jobId, name: "Nightly", entityType: "role", entityName: "Base", simulate: true, createdAt: T1 },
      [
        { serverId: web, roleId },
        { serverId: db, roleId },
        { serverId: web, roleId: undefined },
      ],
    );
    expect(await remediations.find(jobId)).toEqual({
      jobId,
      name: "Nightly",
      entityType: "role",
      entityName: "Base",
      simulate: true,
      createdAt: T1,
    });
    expect(await remediations.find(jobId + 1000)).toBeUndefined();
    expect(await remediations.open(web)).toEqual([{ jobId, serverId: web, roleId, status: "pending", at: T3 }]);
    expect(await remediations.open()).toEqual([
      { jobId, serverId: web, roleId, status: "pending", at: T3 },
      { jobId, serverId: db, roleId, status: "pending", at: T3 },
    ]);
  });

  it("lists open jobs earliest first (start, else creation) and leaves ended ones out", async () => {
    const running = await job("executing", T2);
    await remediations.record(
      { jobId: running, name: undefined, entityType: "server", entityName: "web", simulate: false, createdAt: T2 },
      [{ serverId: web, roleId: undefined }],
    );
    const ended = await job("succeeded", T1);
    await remediations.record(
      { jobId: ended, name: undefined, entityType: "server", entityName: "web", simulate: false, createdAt: T1 },
      [{ serverId: web, roleId: undefined }],
    );
    const open = await remediations.open(web);
    expect(open.map((o) => [o.status, o.at, o.roleId])).toEqual([
      ["executing", T2, undefined],
      ["pending", T3, roleId],
    ]);
    expect(await remediations.open(999_999)).toEqual([]);
  });

  it("gives the pages' lists newest first, by server and by entity name in any case, with the API's state", async () => {
    const all = await jobs.recent();
    expect(all.map((j) => [j.entityType, j.entityName, j.state])).toEqual([
      ["server", "web", "completed"],
      ["server", "web", "running"],
      ["role", "Base", "pending"],
    ]);
    expect(all[2]).toMatchObject({ name: "Nightly", simulate: true, notBefore: T3, startedAt: undefined });
    expect((await jobs.recentOfServer(db)).map((j) => j.entityName)).toEqual(["Base"]);
    expect((await jobs.recentOfServer(web)).length).toBe(3);
    expect((await jobs.recentOfEntity("role", "BASE")).map((j) => j.name)).toEqual(["Nightly"]);
    expect(await jobs.recentOfEntity("environment", "Base")).toEqual([]);
    const first = all[2]?.id as number;
    expect(await jobs.get(first)).toEqual(all[2]);
    expect(await jobs.get(first + 1000)).toBeUndefined();
  });

  it("shows a job canceled before it ran as disabled, and at most the recent ones", async () => {
    const canceled = await job("failed", T3);
    await database().exec("UPDATE jobs SET canceled_at = ? WHERE id = ?", [T3, canceled]);
    await remediations.record(
      { jobId: canceled, name: undefined, entityType: "server", entityName: "db", simulate: false, createdAt: T3 },
      [{ serverId: db, roleId: undefined }],
    );
    expect((await jobs.get(canceled))?.state).toBe("disabled");
    for (let i = 0; i < RECENT_JOBS; i++) {
      const id = await job("succeeded", T3);
      await remediations.record(
        { jobId: id, name: undefined, entityType: "server", entityName: "db", simulate: false, createdAt: T3 },
        [],
      );
    }
    expect((await jobs.recent()).length).toBe(RECENT_JOBS);
  });
});
