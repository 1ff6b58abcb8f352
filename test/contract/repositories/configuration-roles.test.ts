import { beforeAll, describe, expect, it } from "vitest";
import {
  createRolesRepository,
  type RoleRecord,
  type RolesRepository,
  type RoleWrite,
} from "../../../src/areas/configuration/roles-repository.js";
import { createPostgresRolesRepository } from "../../../src/areas/configuration/roles-repository-postgres.js";
import type { ServerWrite } from "../../../src/areas/configuration/servers-repository.js";
import { createPostgresServersRepository } from "../../../src/areas/configuration/servers-repository-postgres.js";
import type { Variables } from "../../../src/areas/configuration/variables-model.js";
import type { DesiredItem } from "../../../src/drift/model.js";
import { DomainError } from "../../../src/domain/errors.js";
import type { PostgresDb } from "../../../src/storage/postgres/database.js";
import { createSecretBox, generateSecretKey, parseSecretKey, type SecretKey } from "../../../src/storage/secrets.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { itOnPostgres, otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertServer } from "../../helpers/seed-rows.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const LATER = "2026-11-29T11:00:00.000Z";
const secrets = createSecretBox(parseSecretKey(generateSecretKey()) as SecretKey);

const item = (key: string, role: string, fields: Partial<DesiredItem> = {}): DesiredItem => ({
  type: "directory",
  key,
  role,
  sensitive: false,
  properties: { mode: "755" },
  ...fields,
});

const role = (name: string, fields: Partial<RoleWrite> = {}): RoleWrite => ({
  name,
  description: null,
  variables: new Map(),
  dependsOnIds: [],
  items: [],
  ...fields,
});

const repositoryOn = (database: TestDatabase): RolesRepository =>
  database.kind === "sqlite"
    ? createRolesRepository(database.sqlite, secrets)
    : createPostgresRolesRepository(database.postgres, secrets);

describeOnBothDatabases("Roles repository", (database) => {
  let roles: RolesRepository;
  const ids: Record<string, number> = {};
  const idOf = (name: string) => ids[name] ?? -1;
  const count = async (sql: string, params: unknown[] = []) =>
    Number((await database().exec(`SELECT count(*) AS n FROM ${sql}`, params))[0]?.n);
  beforeAll(() => {
    roles = repositoryOn(database());
  });

  const variables: Variables = new Map([
    ["Port", { value: "8080", sensitive: false }],
    ["Password", { value: "pw", sensitive: true }],
  ]);

  it("stores roles with dependencies by name, items in order, description and variables", async () => {
    for (const name of ["base", "Db", "zeta"]) ids[name] = (await roles.insert(role(name), CREATED)).id;
    const items = [item("/b", "web"), item("/a", "web", { sensitive: true, properties: { mode: "700" } })];
    const web = await roles.insert(
      role("web", {
        description: "The web tier",
        variables,
        dependsOnIds: [idOf("zeta"), idOf("base"), idOf("Db")],
        items,
      }),
      CREATED,
    );
    ids.web = web.id;
    const expected: RoleRecord = {
      id: web.id,
      name: "web",
      description: "The web tier",
      variables,
      dependsOn: ["base", "Db", "zeta"],
      items,
    };
    expect(web).toEqual(expected);
    expect(await roles.find("WEB")).toEqual(expected);
    expect(await roles.find("nothing")).toBeUndefined();
    expect(await roles.list()).toEqual([
      { id: idOf("base"), name: "base", description: undefined, variables: new Map(), dependsOn: [], items: [] },
      { id: idOf("Db"), name: "Db", description: undefined, variables: new Map(), dependsOn: [], items: [] },
      expected,
      { id: idOf("zeta"), name: "zeta", description: undefined, variables: new Map(), dependsOn: [], items: [] },
    ]);
  });

  it("refuses a taken name in any letter case (ROLE_EXISTS), and a dependency gone, saving nothing", async () => {
    await expect(roles.insert(role("DB"), CREATED)).rejects.toMatchObject({
      kind: "conflict",
      code: "ROLE_EXISTS",
      message: "A role named 'DB' already exists.",
    });
    await expect(
      roles.insert(role("twice", { items: [item("/x", "twice"), item("/x", "twice")] }), CREATED),
    ).rejects.toMatchObject({ kind: "conflict", code: "ROLE_EXISTS" });
    // A role deleted between the service's look-up and the insert: the driver's foreign key
    // error, on both databases (the SQLite code translates none).
    const refused = await roles.insert(role("orphan", { dependsOnIds: [999_999] }), CREATED).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    expect(refused).not.toBeInstanceOf(DomainError);
    expect((await roles.list()).map((r) => r.name)).toEqual(["base", "Db", "web", "zeta"]);
    expect(await count("config_items WHERE role_id IS NOT NULL")).toBe(2);
  });

  it("updates a role: renamed, its items then named after it, dependencies replaced, items kept when not given", async () => {
    const updated = await roles.update(
      idOf("web"),
      role("Web-Tier", { description: null, dependsOnIds: [idOf("Db")], items: undefined }),
      LATER,
    );
    expect(updated).toEqual({
      id: idOf("web"),
      name: "Web-Tier",
      description: undefined,
      variables: new Map(),
      dependsOn: ["Db"],
      items: [item("/b", "Web-Tier"), item("/a", "Web-Tier", { sensitive: true, properties: { mode: "700" } })],
    });
    expect(await roles.find("web")).toBeUndefined();
    const replaced = await roles.update(idOf("web"), role("web", { items: [item("/c", "web")] }), LATER);
    expect(replaced).toMatchObject({ name: "web", dependsOn: [], items: [item("/c", "web")] });
    expect(await count("config_items WHERE role_id = ?", [idOf("web")])).toBe(1);
    expect((await database().exec("SELECT modified_at, created_at FROM roles WHERE id = ?", [idOf("web")]))[0]).toEqual(
      { modified_at: LATER, created_at: CREATED },
    );
  });

  it("refuses an update to a taken name or of a deleted role, changing nothing", async () => {
    const before = await roles.find("web");
    await expect(roles.update(idOf("web"), role("ZETA"), LATER)).rejects.toMatchObject({
      kind: "conflict",
      code: "ROLE_EXISTS",
      message: "A role named 'ZETA' already exists.",
    });
    await expect(roles.update(999_999, role("ghost"), LATER)).rejects.toMatchObject({
      kind: "not_found",
      code: "ROLE_NOT_FOUND",
      message: "The role 'ghost' was not found.",
    });
    expect(await roles.find("web")).toEqual(before);
  });

  it("refuses dependencies that close a cycle (ROLE_CYCLE, naming it), changing nothing", async () => {
    // web -> Db -> base; base -> web would close web -> Db -> base -> web.
    await roles.update(idOf("web"), role("web", { dependsOnIds: [idOf("Db")], items: undefined }), LATER);
    await roles.update(idOf("Db"), role("Db", { dependsOnIds: [idOf("base")] }), LATER);
    await expect(
      roles.update(idOf("base"), role("Base-Renamed", { dependsOnIds: [idOf("web")] }), LATER),
    ).rejects.toMatchObject({
      kind: "unprocessable",
      code: "ROLE_CYCLE",
      message: "The role dependencies would form a cycle: Base-Renamed -> web -> Db -> Base-Renamed.",
    });
    await expect(
      roles.update(idOf("zeta"), role("zeta", { dependsOnIds: [idOf("zeta")] }), LATER),
    ).rejects.toMatchObject({ code: "ROLE_CYCLE", message: "The role dependencies would form a cycle: zeta -> zeta." });
    expect(await roles.find("base")).toMatchObject({ name: "base", dependsOn: [] });
    expect(await count("role_dependencies")).toBe(2);
  });

  it("refuses to delete a role servers list or roles depend on (ROLE_IN_USE, naming them)", async () => {
    const { exec } = database();
    const serverId = await insertServer(exec, "Srv2", CREATED, { type: "local" });
    const otherServerId = await insertServer(exec, "srv1", CREATED, { type: "local" });
    await exec("INSERT INTO server_roles (server_id, role_id, position) VALUES (?, ?, 0), (?, ?, 0)", [
      serverId,
      idOf("Db"),
      otherServerId,
      idOf("Db"),
    ]);
    await expect(roles.delete("db")).rejects.toMatchObject({
      kind: "conflict",
      code: "ROLE_IN_USE",
      message:
        "The role 'Db' is used by the server(s) srv1, Srv2 and the role(s) web (dependsOn): remove it from them first.",
    });
    await expect(roles.delete("base")).rejects.toMatchObject({
      code: "ROLE_IN_USE",
      message: "The role 'base' is used by the role(s) Db (dependsOn): remove it from them first.",
    });
    await exec("INSERT INTO server_roles (server_id, role_id, position) VALUES (?, ?, 1)", [serverId, idOf("zeta")]);
    await expect(roles.delete("zeta")).rejects.toMatchObject({
      code: "ROLE_IN_USE",
      message: "The role 'zeta' is used by the server(s) Srv2: remove it from them first.",
    });
    await exec("DELETE FROM servers");
  });

  it("deletes a role once, with its items and its own dependencies", async () => {
    expect(await roles.delete("WEB")).toBe(true);
    expect(await roles.delete("web")).toBe(false);
    expect(await count("config_items WHERE role_id = ?", [idOf("web")])).toBe(0);
    expect(await count("role_dependencies WHERE role_id = ?", [idOf("web")])).toBe(0);
    expect(await roles.delete("Db")).toBe(true);
    expect((await roles.list()).map((r) => r.name)).toEqual(["base", "zeta"]);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    const cached = await roles.insert(role("cached"), CREATED);
    await roles.update(cached.id, role("cached"), LATER);
    await roles.delete("cached");
    expect(db.commits()).toBe(before + 3);
    await roles.list();
    await roles.find("base");
    expect(db.commits()).toBe(before + 3);
  });

  describe("two nodes on one PostgreSQL database", () => {
    const otherNode = otherNodesForBlock(database);
    const onPostgres = itOnPostgres(database);
    let other: PostgresDb;
    let a: RolesRepository;
    let b: RolesRepository;
    beforeAll(() => {
      const db = database();
      if (db.kind !== "postgres") return;
      other = otherNode();
      a = createPostgresRolesRepository(db.postgres, secrets);
      b = createPostgresRolesRepository(other, secrets);
    });

    onPostgres("two nodes creating one name: one wins, the other gets ROLE_EXISTS", async () => {
      for (let round = 0; round < 5; round++) {
        const results = await Promise.allSettled([
          a.insert(role(`race${round}`), CREATED),
          b.insert(role(`RACE${round}`), CREATED),
        ]);
        expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
        const [lost] = results.filter((result) => result.status === "rejected");
        expect(lost?.reason).toMatchObject({ kind: "conflict", code: "ROLE_EXISTS" });
      }
    });

    onPostgres("two nodes each adding one half of a cycle: one wins, the other gets ROLE_CYCLE", async () => {
      for (let round = 0; round < 8; round++) {
        const left = await a.insert(role(`left${round}`), CREATED);
        const right = await a.insert(role(`right${round}`), CREATED);
        const results = await Promise.allSettled([
          a.update(left.id, role(`left${round}`, { dependsOnIds: [right.id] }), LATER),
          b.update(right.id, role(`right${round}`, { dependsOnIds: [left.id] }), LATER),
        ]);
        expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
        const [lost] = results.filter((result) => result.status === "rejected");
        expect(lost?.reason).toMatchObject({ kind: "unprocessable", code: "ROLE_CYCLE" });
        const edges = await database().exec("SELECT count(*) AS n FROM role_dependencies WHERE role_id IN (?, ?)", [
          left.id,
          right.id,
        ]);
        expect(Number(edges[0]?.n)).toBe(1);
      }
    });

    onPostgres("two nodes deleting one role: one deletes it, the other finds nothing", async () => {
      for (let round = 0; round < 5; round++) {
        await a.insert(role(`doomed${round}`), CREATED);
        const results = await Promise.all([a.delete(`doomed${round}`), b.delete(`doomed${round}`)]);
        expect(results.sort()).toEqual([false, true]);
      }
    });

    onPostgres(
      "a role deleted while another node gives it to a server: refused on one side, never dropped from the server",
      async () => {
        const db = (database() as { postgres: PostgresDb }).postgres;
        const serversB = createPostgresServersRepository(other, secrets);
        const local = (name: string, roleIds: number[]): ServerWrite => ({
          name,
          type: "local",
          driftMode: "reportOnly",
          active: true,
          rootPath: "/srv",
          hostName: null,
          port: null,
          credentialsId: null,
          hostKeySha256: null,
          tempPath: null,
          variables: new Map(),
          roleIds,
          environmentIds: [],
          items: [],
        });
        const target = await createPostgresServersRepository(db, secrets).insert(local("holder", []), CREATED);
        for (let round = 0; round < 8; round++) {
          const taken = await a.insert(role(`taken${round}`), CREATED);
          const [deleted, saved] = await Promise.allSettled([
            a.delete(`taken${round}`),
            serversB.update(target.row.id, local("holder", [taken.id]), LATER),
          ]);
          if (deleted.status === "fulfilled" && deleted.value) {
            expect(saved).toMatchObject({
              status: "rejected",
              reason: { kind: "unprocessable", code: "REFERENCE_GONE" },
            });
          } else {
            expect(deleted).toMatchObject({ status: "rejected", reason: { kind: "conflict", code: "ROLE_IN_USE" } });
            expect(saved).toMatchObject({ status: "fulfilled", value: { roles: [`taken${round}`] } });
          }
        }
      },
    );
  });
});
