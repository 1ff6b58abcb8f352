import { beforeAll, expect, it } from "vitest";
import {
  type CollectionsRepository,
  createCollectionsRepository,
} from "../../../src/areas/configuration/collections-repository.js";
import { createPostgresCollectionsRepository } from "../../../src/areas/configuration/collections-repository-postgres.js";
import { createStatusRepository, type StatusRepository } from "../../../src/areas/configuration/status-repository.js";
import { createPostgresStatusRepository } from "../../../src/areas/configuration/status-repository-postgres.js";
import type { ItemResult } from "../../../src/drift/model.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { insertServer } from "../../helpers/seed-rows.js";

/**
 * The configuration status's reads (status-repository.ts) on both databases: every server with its
 * last check, open remediation jobs, memberships, and the drifted items per role of the last checks
 * that found drift.
 */
const T1 = "2026-11-29T10:00:00.000Z";
const T2 = "2026-11-29T10:01:00.000Z";
const T3 = "2026-11-29T10:02:00.000Z";

const on = (database: TestDatabase): { status: StatusRepository; collections: CollectionsRepository } =>
  database.kind === "sqlite"
    ? { status: createStatusRepository(database.sqlite), collections: createCollectionsRepository(database.sqlite) }
    : {
        status: createPostgresStatusRepository(database.postgres),
        collections: createPostgresCollectionsRepository(database.postgres, "status-test-node"),
      };

const result = (key: string, role: string | null, status: ItemResult["status"]): ItemResult => ({
  type: "file",
  key,
  role,
  status,
  differences: [],
});

describeOnBothDatabases("Configuration status reads", (database) => {
  let status: StatusRepository;
  let collections: CollectionsRepository;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    ({ status, collections } = on(database()));
    const { exec } = database();
    const id = async (sql: string, params: unknown[]) => Number((await exec(`${sql} RETURNING id`, params))[0]?.id);
    ids.web = await insertServer(exec, "Web", T1, { type: "local" });
    ids.api = await insertServer(exec, "api", T1, { type: "local" });
    ids.idle = await insertServer(exec, "idle", T1, { type: "local" });
    for (const name of ["Base", "App"]) {
      ids[name] = await id(
        "INSERT INTO roles (name, name_key, variables, created_at, modified_at) VALUES (?, ?, '{}', ?, ?)",
        [name, name.toLowerCase(), T1, T1],
      );
    }
    ids.prod = await id("INSERT INTO environments (name, name_key) VALUES ('Prod', 'prod')", []);
    await exec("INSERT INTO role_dependencies (role_id, depends_on_id) VALUES (?, ?)", [ids.App, ids.Base]);
    await exec("INSERT INTO server_roles (server_id, role_id, position) VALUES (?, ?, 0)", [ids.web, ids.App]);
    await exec("INSERT INTO server_environments (server_id, environment_id) VALUES (?, ?)", [ids.web, ids.prod]);
    // web: an older check, then one that found two Base items and one App item drifted.
    const roleIds = new Map([
      ["base", ids.Base as number],
      ["app", ids.App as number],
    ]);
    const older = (await collections.begin(ids.web as number, undefined, T1)) as number;
    await collections.complete(older, T1, [result("/o", "Base", "drifted")], roleIds);
    ids.webCheck = (await collections.begin(ids.web as number, undefined, T2)) as number;
    await collections.complete(
      ids.webCheck,
      T3,
      [
        result("/a", "Base", "drifted"),
        result("/b", "Base", "drifted"),
        result("/c", "App", "drifted"),
        result("/d", null, "drifted"),
        result("/e", "App", "current"),
      ],
      roleIds,
    );
    // api: a check that failed (its drift is not asked for).
    ids.apiCheck = (await collections.begin(ids.api as number, undefined, T2)) as number;
    await collections.fail(ids.apiCheck, T3, "unreachable");
    ids.job = await id(
      "INSERT INTO jobs (kind, payload, status, created_at) VALUES ('configuration.remediate', '{}', 'pending', ?)",
      [T2],
    );
    await exec(
      "INSERT INTO config_remediations (job_id, entity_type, entity_name, simulate, created_at) VALUES (?, 'server', 'Web', 0, ?)",
      [ids.job, T2],
    );
    await exec("INSERT INTO config_remediation_targets (job_id, server_id) VALUES (?, ?)", [ids.job, ids.web]);
  });

  it("reads every server by name with its last check, the open jobs, roles, environments and memberships", async () => {
    const facts = await status.facts();
    expect(facts.servers.map((s) => [s.name, s.collection_id, s.collection_status, s.drifted])).toEqual([
      ["api", ids.apiCheck, "error", 0],
      ["idle", null, null, null],
      ["Web", ids.webCheck, "completed", 4],
    ]);
    expect(facts.servers[0]).toMatchObject({
      server_type: "local",
      drift_mode: "reportOnly",
      active: 1,
      agent_last_seen_at: null,
      started_at: T2,
      error_text: "unreachable",
    });
    expect(facts.open).toEqual([{ jobId: ids.job, serverId: ids.web, roleId: undefined, status: "pending", at: T2 }]);
    expect(facts.roles).toEqual([
      { id: ids.App, name: "App" },
      { id: ids.Base, name: "Base" },
    ]);
    expect(facts.environments).toEqual([{ id: ids.prod, name: "Prod" }]);
    expect(facts.serverRoles).toEqual([{ server_id: ids.web, role_id: ids.App }]);
    expect(facts.dependencies).toEqual([{ role_id: ids.App, depends_on_id: ids.Base }]);
    expect(facts.environmentMembers).toEqual([{ server_id: ids.web, environment_id: ids.prod }]);
    const drift = [...facts.roleDrift].sort((a, b) => a.role_id - b.role_id);
    expect(drift).toEqual(
      [
        { collection_id: ids.webCheck, role_id: ids.Base, drifted: 2 },
        { collection_id: ids.webCheck, role_id: ids.App, drifted: 1 },
      ].sort((a, b) => (a.role_id as number) - (b.role_id as number)),
    );
  });

  it("reads one server, and the memberships alone", async () => {
    expect(await status.server(ids.api as number)).toMatchObject({ name: "api", collection_status: "error" });
    expect(await status.server(999_999)).toBeUndefined();
    expect(await status.memberships()).toEqual({
      serverRoles: [{ server_id: ids.web, role_id: ids.App }],
      dependencies: [{ role_id: ids.App, depends_on_id: ids.Base }],
    });
  });

  it("notifies no one for its reads on PostgreSQL", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    await status.facts();
    await status.memberships();
    await status.server(ids.web as number);
    expect(db.commits()).toBe(before);
  });
});
