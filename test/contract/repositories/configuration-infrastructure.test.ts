import { beforeAll, expect, it } from "vitest";
import {
  createInfrastructureRepository,
  type InfrastructureRepository,
  type ServerSummary,
} from "../../../src/areas/configuration/infrastructure-repository.js";
import { createPostgresInfrastructureRepository } from "../../../src/areas/configuration/infrastructure-repository-postgres.js";
import { createRolesRepository, type RolesRepository } from "../../../src/areas/configuration/roles-repository.js";
import { createPostgresRolesRepository } from "../../../src/areas/configuration/roles-repository-postgres.js";
import {
  createServersRepository,
  type ServersRepository,
  type ServerWrite,
} from "../../../src/areas/configuration/servers-repository.js";
import { createPostgresServersRepository } from "../../../src/areas/configuration/servers-repository-postgres.js";
import { sealVariable, type Variables } from "../../../src/areas/configuration/variables-model.js";
import type { DesiredItem } from "../../../src/drift/model.js";
import { createSecretBox, generateSecretKey, parseSecretKey, type SecretKey } from "../../../src/storage/secrets.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const SEEN = "2026-11-29T10:30:00.000Z";
const secrets = createSecretBox(parseSecretKey(generateSecretKey()) as SecretKey);

const file = (key: string, fields: Partial<DesiredItem> = {}): DesiredItem => ({
  type: "file",
  key,
  role: null,
  sensitive: false,
  properties: { content: `content of ${key}` },
  ...fields,
});

const vars = (entries: Record<string, string | { value: string; sensitive: true }>): Variables =>
  new Map(
    Object.entries(entries).map(([name, value]) => [
      name,
      typeof value === "string" ? { value, sensitive: false } : value,
    ]),
  );

const server = (name: string, fields: Partial<ServerWrite> = {}): ServerWrite => ({
  name,
  type: "local",
  driftMode: "reportOnly",
  active: true,
  rootPath: `/srv/${name}`,
  hostName: null,
  port: null,
  credentialsId: null,
  hostKeySha256: null,
  tempPath: null,
  variables: new Map(),
  roleIds: [],
  environmentIds: [],
  items: [],
  ...fields,
});

const on = (database: TestDatabase) =>
  database.kind === "sqlite"
    ? {
        infrastructure: createInfrastructureRepository(database.sqlite, secrets),
        servers: createServersRepository(database.sqlite, secrets),
        roles: createRolesRepository(database.sqlite, secrets),
      }
    : {
        infrastructure: createPostgresInfrastructureRepository(database.postgres, secrets),
        servers: createPostgresServersRepository(database.postgres, secrets),
        roles: createPostgresRolesRepository(database.postgres, secrets),
      };

const repositoryOn = (database: TestDatabase): InfrastructureRepository => on(database).infrastructure;

describeOnBothDatabases("Configuration infrastructure repository (runtime reads)", (database) => {
  let infrastructure: InfrastructureRepository;
  let servers: ServersRepository;
  let roles: RolesRepository;
  let base: number;
  let web: number;
  let app: number;
  let prod: number;
  let test: number;
  let alpha: number;
  let zeta: number;
  let agent: number;

  beforeAll(async () => {
    const db = database();
    infrastructure = repositoryOn(db);
    ({ servers, roles } = on(db));
    const environment = async (name: string, variables: string) =>
      (
        (await db.exec("INSERT INTO environments (name, name_key, variables) VALUES (?, ?, ?) RETURNING id", [
          name,
          name.toLowerCase(),
          variables,
        ])) as [{ id: number }]
      )[0].id;
    prod = await environment("Prod", JSON.stringify({ Region: "eu" }));
    test = await environment("test", "{}");
    await db.exec("INSERT INTO global_variables (name, name_key, value, sensitive) VALUES (?, ?, ?, ?)", [
      "Zone",
      "zone",
      "z1",
      0,
    ]);
    await db.exec("INSERT INTO global_variables (name, name_key, value, sensitive) VALUES (?, ?, ?, ?)", [
      "ApiToken",
      "apitoken",
      sealVariable("global-secret", secrets),
      1,
    ]);

    base = (
      await roles.insert(
        {
          name: "Base",
          description: null,
          variables: vars({ Port: "80" }),
          dependsOnIds: [],
          items: [file("/etc/base", { role: "Base" }), file("/etc/motd", { role: "Base", sensitive: true })],
        },
        CREATED,
      )
    ).id;
    app = (
      await roles.insert(
        { name: "app", description: "the app", variables: new Map(), dependsOnIds: [], items: [] },
        CREATED,
      )
    ).id;
    web = (
      await roles.insert(
        {
          name: "Web",
          description: null,
          variables: vars({ Secret: { value: "role-secret", sensitive: true } }),
          dependsOnIds: [base, app],
          items: [file("/var/www", { role: "Web" })],
        },
        CREATED,
      )
    ).id;

    zeta = (
      await servers.insert(
        server("zeta", { roleIds: [web, base], environmentIds: [test, prod], items: [file("/own")] }),
        CREATED,
      )
    ).row.id;
    alpha = (
      await servers.insert(
        server("Alpha", {
          driftMode: "automaticallyRemediate",
          active: false,
          roleIds: [base],
          environmentIds: [prod],
          variables: vars({ Host: "alpha", Key: { value: "server-secret", sensitive: true } }),
        }),
        CREATED,
      )
    ).row.id;
    agent = (
      await servers.insert(
        server("Mid", { type: "agent", rootPath: null, driftMode: "none", agentKeyHash: "h".repeat(64) }),
        CREATED,
      )
    ).row.id;
    await db.exec("UPDATE servers SET agent_last_seen_at = ? WHERE id = ?", [SEEN, agent]);
  });

  const summary = (id: number, name: string, fields: Partial<ServerSummary> = {}): ServerSummary => ({
    id,
    name,
    type: "local",
    rootPath: `/srv/${name}`,
    hostName: undefined,
    port: undefined,
    credentialsId: undefined,
    hostKeySha256: undefined,
    active: true,
    driftMode: "reportOnly",
    agentLastSeenAt: undefined,
    ...fields,
  });
  const alphaSummary = () => summary(alpha, "Alpha", { active: false, driftMode: "automaticallyRemediate" });
  const midSummary = () =>
    summary(agent, "Mid", { type: "agent", rootPath: undefined, driftMode: "none", agentLastSeenAt: SEEN });

  it("finds servers, roles and environments by name, case-insensitively, with the name as stored", async () => {
    expect(await infrastructure.findServer("ALPHA")).toEqual({ id: alpha, name: "Alpha" });
    expect(await infrastructure.findRole("web")).toEqual({ id: web, name: "Web" });
    expect(await infrastructure.findEnvironment("PROD")).toEqual({ id: prod, name: "Prod" });
    expect(await infrastructure.findServer("nope")).toBeUndefined();
    expect(await infrastructure.findRole("nope")).toBeUndefined();
    expect(await infrastructure.findEnvironment("nope")).toBeUndefined();
  });

  it("lists every server by name, and reads one by id or by its agent key", async () => {
    const zetaSummary = summary(zeta, "zeta");
    expect(await infrastructure.listServers()).toEqual([alphaSummary(), midSummary(), zetaSummary]);
    expect(await infrastructure.getServer(zeta)).toEqual(zetaSummary);
    expect(await infrastructure.getServer(999_999)).toBeUndefined();
    expect(await infrastructure.findServerByAgentKeyHash("h".repeat(64))).toEqual(midSummary());
    expect(await infrastructure.findServerByAgentKeyHash("x".repeat(64))).toBeUndefined();
  });

  it("reads a server's roles in its order, its environments and a role's links by name", async () => {
    expect(await infrastructure.serverRoles(zeta)).toEqual([
      { id: web, name: "Web" },
      { id: base, name: "Base" },
    ]);
    expect(await infrastructure.serverEnvironments(zeta)).toEqual([
      { id: prod, name: "Prod" },
      { id: test, name: "test" },
    ]);
    expect(await infrastructure.roleDependencies(web)).toEqual([
      { id: app, name: "app" },
      { id: base, name: "Base" },
    ]);
    expect(await infrastructure.roleServers(base)).toEqual([
      { id: alpha, name: "Alpha" },
      { id: zeta, name: "zeta" },
    ]);
    expect(await infrastructure.environmentServers(prod)).toEqual([
      { id: alpha, name: "Alpha" },
      { id: zeta, name: "zeta" },
    ]);
    expect(await infrastructure.serverRoles(agent)).toEqual([]);
    expect(await infrastructure.roleDependencies(base)).toEqual([]);
    expect(await infrastructure.roleServers(app)).toEqual([]);
    expect(await infrastructure.environmentServers(999_999)).toEqual([]);
  });

  it("reads items in their order with their role, sensitive content opened", async () => {
    expect(await infrastructure.roleItems(base)).toEqual([
      file("/etc/base", { role: "Base" }),
      file("/etc/motd", { role: "Base", sensitive: true }),
    ]);
    expect(await infrastructure.serverItems(zeta)).toEqual([file("/own")]);
    expect(await infrastructure.roleItems(app)).toEqual([]);
    expect(await infrastructure.serverItems(999_999)).toEqual([]);
  });

  it("reads variables as stored, sensitive values opened; none for a missing row", async () => {
    expect(await infrastructure.serverVariables(alpha)).toEqual(
      vars({ Host: "alpha", Key: { value: "server-secret", sensitive: true } }),
    );
    expect(await infrastructure.roleVariables(web)).toEqual(
      vars({ Secret: { value: "role-secret", sensitive: true } }),
    );
    expect(await infrastructure.environmentVariables(prod)).toEqual(vars({ Region: "eu" }));
    expect(await infrastructure.globalVariables()).toEqual(
      vars({ ApiToken: { value: "global-secret", sensitive: true }, Zone: "z1" }),
    );
    expect([...(await infrastructure.globalVariables()).keys()]).toEqual(["ApiToken", "Zone"]);
    expect(await infrastructure.serverVariables(999_999)).toEqual(new Map());
    expect(await infrastructure.roleVariables(999_999)).toEqual(new Map());
    expect(await infrastructure.environmentVariables(999_999)).toEqual(new Map());
  });

  it("sees a revoked agent key and a deleted server as gone, and a role's deletion in its servers", async () => {
    await servers.setAgentKey("mid", null, CREATED);
    expect(await infrastructure.findServerByAgentKeyHash("h".repeat(64))).toBeUndefined();
    await database().exec("DELETE FROM roles WHERE id = ?", [app]);
    expect(await infrastructure.roleDependencies(web)).toEqual([{ id: base, name: "Base" }]);
    await servers.delete("alpha");
    expect(await infrastructure.getServer(alpha)).toBeUndefined();
    expect(await infrastructure.roleServers(base)).toEqual([{ id: zeta, name: "zeta" }]);
    expect(await infrastructure.environmentServers(prod)).toEqual([{ id: zeta, name: "zeta" }]);
  });
});
