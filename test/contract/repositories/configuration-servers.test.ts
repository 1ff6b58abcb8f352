import { beforeAll, describe, expect, it } from "vitest";
import { createPostgresCredentialsRepository } from "../../../src/areas/configuration/credentials-repository-postgres.js";
import type { ServerRow } from "../../../src/areas/configuration/infrastructure-repository.js";
import {
  createServersRepository,
  type ServerRecord,
  type ServersRepository,
  type ServerWrite,
} from "../../../src/areas/configuration/servers-repository.js";
import { createPostgresServersRepository } from "../../../src/areas/configuration/servers-repository-postgres.js";
import type { Variables } from "../../../src/areas/configuration/variables-model.js";
import type { DesiredItem } from "../../../src/drift/model.js";
import type { PostgresDb } from "../../../src/storage/postgres/database.js";
import { createSecretBox, generateSecretKey, parseSecretKey, type SecretKey } from "../../../src/storage/secrets.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { itOnPostgres, otherNodesForBlock } from "../../helpers/postgres-races.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const LATER = "2026-11-29T11:00:00.000Z";
const secrets = createSecretBox(parseSecretKey(generateSecretKey()) as SecretKey);

const file = (key: string, fields: Partial<DesiredItem> = {}): DesiredItem => ({
  type: "file",
  key,
  role: null,
  sensitive: false,
  properties: { content: `content of ${key}` },
  ...fields,
});

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

/** The row (`SELECT *`: name_key too) of a local server saved as `server(name)` at CREATED. */
const localRow = (id: number, name: string, fields: Partial<ServerRow> = {}): ServerRow & { name_key: string } => ({
  id,
  name,
  name_key: name.toLowerCase(),
  server_type: "local",
  drift_mode: "reportOnly",
  active: 1,
  root_path: `/srv/${name}`,
  host_name: null,
  port: null,
  credentials_id: null,
  host_key_sha256: null,
  temp_path: null,
  agent_key_hash: null,
  agent_key_created_at: null,
  agent_last_seen_at: null,
  agent_version: null,
  variables: "{}",
  created_at: CREATED,
  modified_at: CREATED,
  ...fields,
});

const repositoryOn = (database: TestDatabase): ServersRepository =>
  database.kind === "sqlite"
    ? createServersRepository(database.sqlite, secrets)
    : createPostgresServersRepository(database.postgres, secrets);

describeOnBothDatabases("Servers repository", (database) => {
  let servers: ServersRepository;
  const roles: Record<string, number> = {};
  const environments: Record<string, number> = {};
  let credentialId: number;
  const count = async (sql: string, params: unknown[] = []) =>
    Number((await database().exec(`SELECT count(*) AS n FROM ${sql}`, params))[0]?.n);

  beforeAll(async () => {
    servers = repositoryOn(database());
    const { exec } = database();
    for (const name of ["web", "Db", "base"]) {
      [{ id: roles[name] }] = (await exec(
        "INSERT INTO roles (name, name_key, created_at, modified_at) VALUES (?, ?, ?, ?) RETURNING id",
        [name, name.toLowerCase(), CREATED, CREATED],
      )) as [{ id: number }];
    }
    for (const name of ["test", "Prod", "dev"]) {
      [{ id: environments[name] }] = (await exec(
        "INSERT INTO environments (name, name_key) VALUES (?, ?) RETURNING id",
        [name, name.toLowerCase()],
      )) as [{ id: number }];
    }
    [{ id: credentialId }] = (await exec(
      `INSERT INTO credentials (name, name_key, kind, user_name, secret, created_at, modified_at)
       VALUES ('Deploy', 'deploy', 'ssh-key', 'deploy', 'sealed', ?, ?) RETURNING id`,
      [CREATED, CREATED],
    )) as [{ id: number }];
  });

  let web1: ServerRecord;
  const variables: Variables = new Map([
    ["Region", { value: "eu", sensitive: false }],
    ["Token", { value: "s3cret", sensitive: true }],
  ]);
  const items = [file("/etc/b"), file("/etc/a", { sensitive: true, properties: { content: "hidden" } })];

  it("stores a server with its roles in order, environments by name, items in order and variables", async () => {
    web1 = await servers.insert(
      server("Web1", {
        variables,
        roleIds: [roles.web ?? 0, roles.Db ?? 0, roles.base ?? 0],
        environmentIds: [environments.test ?? 0, environments.Prod ?? 0],
        items,
      }),
      CREATED,
    );
    expect(web1).toEqual({
      row: localRow(web1.row.id, "Web1", {
        variables: expect.stringMatching(/^\{"Region":"eu","Token":\{"value":"v1:/),
      }),
      roles: ["web", "Db", "base"],
      environments: ["Prod", "test"],
      items,
      credentialsName: undefined,
      variables,
    });
    // A sensitive item's content is not stored as it is.
    expect(await count("config_items WHERE definition LIKE ?", ["%hidden%"])).toBe(0);
    expect(await servers.find("WEB1")).toEqual(web1);
    expect(await servers.find("nothing")).toBeUndefined();
  });

  it("stores ssh and agent servers, naming the credential and keeping the agent key's time", async () => {
    const ssh = await servers.insert(
      server("ssh1", {
        type: "ssh",
        hostName: "host.example",
        port: 2222,
        credentialsId: credentialId,
        hostKeySha256: "k".repeat(43),
        rootPath: "/opt",
        tempPath: "/tmp/w",
        driftMode: "automaticallyRemediate",
        active: false,
      }),
      CREATED,
    );
    expect(ssh).toEqual({
      row: localRow(ssh.row.id, "ssh1", {
        server_type: "ssh",
        drift_mode: "automaticallyRemediate",
        active: 0,
        root_path: "/opt",
        host_name: "host.example",
        port: 2222,
        credentials_id: credentialId,
        host_key_sha256: "k".repeat(43),
        temp_path: "/tmp/w",
      }),
      roles: [],
      environments: [],
      items: [],
      credentialsName: "Deploy",
      variables: new Map(),
    });
    const agent = await servers.insert(
      server("agent1", { type: "agent", rootPath: null, agentKeyHash: "a".repeat(64) }),
      CREATED,
    );
    expect(agent.row).toEqual(
      localRow(agent.row.id, "agent1", {
        server_type: "agent",
        root_path: null,
        agent_key_hash: "a".repeat(64),
        agent_key_created_at: CREATED,
      }),
    );
    expect((await servers.list()).map((record) => record.row.name)).toEqual(["agent1", "ssh1", "Web1"]);
  });

  it("refuses a taken name or agent key (SERVER_EXISTS) and a reference gone (REFERENCE_GONE), saving nothing", async () => {
    await expect(servers.insert(server("WEB1"), CREATED)).rejects.toMatchObject({
      kind: "conflict",
      code: "SERVER_EXISTS",
      message: "A server named 'WEB1' already exists.",
    });
    await expect(
      servers.insert(server("agent2", { type: "agent", agentKeyHash: "a".repeat(64) }), CREATED),
    ).rejects.toMatchObject({ kind: "conflict", code: "SERVER_EXISTS" });
    // Two items of one type and key: the unique index, as SQLite says it.
    await expect(servers.insert(server("twice", { items: [file("/x"), file("/x")] }), CREATED)).rejects.toMatchObject({
      kind: "conflict",
      code: "SERVER_EXISTS",
    });
    for (const gone of [
      { type: "ssh" as const, hostName: "h", port: 22, credentialsId: 999_999 },
      { roleIds: [999_999] },
      { environmentIds: [999_999] },
    ]) {
      await expect(servers.insert(server("gone", gone), CREATED)).rejects.toMatchObject({
        kind: "unprocessable",
        code: "REFERENCE_GONE",
      });
    }
    expect((await servers.list()).map((record) => record.row.name)).toEqual(["agent1", "ssh1", "Web1"]);
    expect(await count("config_items")).toBe(2);
  });

  it("updates every column and replaces roles and environments, keeping items and agent key when not given", async () => {
    const updated = await servers.update(
      web1.row.id,
      server("web-one", {
        driftMode: "none",
        rootPath: "/srv/one",
        tempPath: "/srv/tmp",
        variables: new Map([["Region", { value: "us", sensitive: false }]]),
        roleIds: [roles.base ?? 0, roles.web ?? 0],
        environmentIds: [environments.dev ?? 0],
        items: undefined,
      }),
      LATER,
    );
    expect(updated).toEqual({
      row: localRow(web1.row.id, "web-one", {
        drift_mode: "none",
        root_path: "/srv/one",
        temp_path: "/srv/tmp",
        variables: '{"Region":"us"}',
        modified_at: LATER,
      }),
      roles: ["base", "web"],
      environments: ["dev"],
      items,
      credentialsName: undefined,
      variables: new Map([["Region", { value: "us", sensitive: false }]]),
    });
    expect(await servers.find("web1")).toBeUndefined();
    const replaced = await servers.update(web1.row.id, server("web-one", { items: [file("/etc/c")] }), LATER);
    expect(replaced.items).toEqual([file("/etc/c")]);
    expect(replaced.roles).toEqual([]);
    expect(await count("config_items WHERE server_id = ?", [web1.row.id])).toBe(1);
  });

  it("sets, keeps and drops an agent key through update", async () => {
    const agent = (await servers.find("agent1")) as ServerRecord;
    const same = await servers.update(agent.row.id, server("agent1", { type: "agent", rootPath: null }), LATER);
    expect([same.row.agent_key_hash, same.row.agent_key_created_at]).toEqual(["a".repeat(64), CREATED]);
    const rotated = await servers.update(
      agent.row.id,
      server("agent1", { type: "agent", rootPath: null, agentKeyHash: "b".repeat(64) }),
      LATER,
    );
    expect([rotated.row.agent_key_hash, rotated.row.agent_key_created_at]).toEqual(["b".repeat(64), LATER]);
    const dropped = await servers.update(agent.row.id, server("agent1", { agentKeyHash: null }), LATER);
    expect([dropped.row.server_type, dropped.row.agent_key_hash, dropped.row.agent_key_created_at]).toEqual([
      "local",
      null,
      null,
    ]);
    await servers.update(agent.row.id, server("agent1", { type: "agent", rootPath: null }), LATER);
  });

  it("refuses an update to a taken name, of a deleted server or to a reference gone, changing nothing", async () => {
    const before = (await servers.find("web-one")) as ServerRecord;
    await expect(servers.update(before.row.id, server("SSH1"), LATER)).rejects.toMatchObject({
      kind: "conflict",
      code: "SERVER_EXISTS",
      message: "A server named 'SSH1' already exists.",
    });
    await expect(servers.update(999_999, server("ghost"), LATER)).rejects.toMatchObject({
      kind: "not_found",
      code: "SERVER_NOT_FOUND",
      message: "The server 'ghost' was not found.",
    });
    await expect(
      servers.update(before.row.id, server("web-renamed", { roleIds: [roles.web ?? 0, 999_999] }), LATER),
    ).rejects.toMatchObject({ kind: "unprocessable", code: "REFERENCE_GONE" });
    expect(await servers.find("web-one")).toEqual(before);
  });

  it("sets and revokes an agent server's key by name, and only an agent server's", async () => {
    expect(await servers.setAgentKey("AGENT1", "c".repeat(64), LATER)).toBe(true);
    let agent = (await servers.find("agent1")) as ServerRecord;
    expect([agent.row.agent_key_hash, agent.row.agent_key_created_at]).toEqual(["c".repeat(64), LATER]);
    expect(await servers.setAgentKey("agent1", null, LATER)).toBe(true);
    agent = (await servers.find("agent1")) as ServerRecord;
    expect([agent.row.agent_key_hash, agent.row.agent_key_created_at]).toEqual([null, null]);
    expect(await servers.setAgentKey("ssh1", "d".repeat(64), LATER)).toBe(false);
    expect(await servers.setAgentKey("nothing", "d".repeat(64), LATER)).toBe(false);
    expect((await servers.find("ssh1"))?.row.agent_key_hash).toBeNull();
  });

  it("deletes a server once, with its roles, environments and items, not the roles themselves", async () => {
    const web = (await servers.update(
      (await servers.find("web-one"))?.row.id ?? 0,
      server("web-one", { roleIds: [roles.web ?? 0], environmentIds: [environments.dev ?? 0] }),
      LATER,
    )) as ServerRecord;
    expect(await servers.delete("WEB-ONE")).toBe(true);
    expect(await servers.delete("web-one")).toBe(false);
    expect(await count("server_roles WHERE server_id = ?", [web.row.id])).toBe(0);
    expect(await count("server_environments WHERE server_id = ?", [web.row.id])).toBe(0);
    expect(await count("config_items WHERE server_id = ?", [web.row.id])).toBe(0);
    expect(await count("roles")).toBe(3);
    expect((await servers.list()).map((record) => record.row.name)).toEqual(["agent1", "ssh1"]);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    const cached = await servers.insert(server("cached"), CREATED);
    await servers.update(cached.row.id, server("cached"), LATER);
    await servers.setAgentKey("cached", null, LATER);
    await servers.delete("cached");
    expect(db.commits()).toBe(before + 4);
    await servers.list();
    await servers.find("ssh1");
    expect(db.commits()).toBe(before + 4);
  });

  describe("two nodes on one PostgreSQL database", () => {
    const otherNode = otherNodesForBlock(database);
    const onPostgres = itOnPostgres(database);
    let a: ServersRepository;
    let b: ServersRepository;
    beforeAll(() => {
      const db = database();
      if (db.kind !== "postgres") return;
      a = createPostgresServersRepository(db.postgres, secrets);
      b = createPostgresServersRepository(otherNode(), secrets);
    });

    onPostgres("two nodes creating one name: one wins, the other gets SERVER_EXISTS", async () => {
      for (let round = 0; round < 5; round++) {
        const results = await Promise.allSettled([
          a.insert(server(`race${round}`, { roleIds: [roles.web ?? 0] }), CREATED),
          b.insert(server(`Race${round}`, { roleIds: [roles.Db ?? 0] }), CREATED),
        ]);
        expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
        const [lost] = results.filter((result) => result.status === "rejected");
        expect(lost?.reason).toMatchObject({ kind: "conflict", code: "SERVER_EXISTS" });
      }
    });

    onPostgres("two nodes updating one server: the last update is the whole record, never a mix", async () => {
      const target = await a.insert(server("mixed"), CREATED);
      for (let round = 0; round < 5; round++) {
        const first = server("mixed", {
          rootPath: "/first",
          roleIds: [roles.web ?? 0, roles.Db ?? 0],
          environmentIds: [environments.test ?? 0],
          items: [file("/first")],
        });
        const second = server("mixed", {
          rootPath: "/second",
          roleIds: [roles.base ?? 0],
          environmentIds: [environments.dev ?? 0, environments.Prod ?? 0],
          items: [file("/second/a"), file("/second/b")],
        });
        await Promise.all([a.update(target.row.id, first, LATER), b.update(target.row.id, second, LATER)]);
        const final = (await a.find("mixed")) as ServerRecord;
        const expected =
          final.row.root_path === "/first"
            ? { roles: ["web", "Db"], environments: ["test"], items: [file("/first")] }
            : { roles: ["base"], environments: ["dev", "Prod"], items: [file("/second/a"), file("/second/b")] };
        expect({ roles: final.roles, environments: final.environments, items: final.items }).toEqual(expected);
      }
    });

    onPostgres(
      "a credential deleted while another node saves a server with it: one of them is refused, with the API's error",
      async () => {
        const credentialsA = createPostgresCredentialsRepository((database() as { postgres: PostgresDb }).postgres);
        const outcomes = new Set<string>();
        for (let round = 0; round < 8; round++) {
          const credential = await credentialsA.insert(
            { name: `key${round}`, kind: "ssh-key", userName: "u", sealedSecret: "s" },
            CREATED,
          );
          const [deleted, saved] = await Promise.allSettled([
            credentialsA.delete(`key${round}`),
            b.insert(
              server(`uses-key${round}`, { type: "ssh", hostName: "h", port: 22, credentialsId: credential.id }),
              CREATED,
            ),
          ]);
          if (deleted.status === "fulfilled") {
            expect(saved).toMatchObject({
              status: "rejected",
              reason: { kind: "unprocessable", code: "REFERENCE_GONE" },
            });
            outcomes.add("deleted");
          } else {
            expect(deleted.reason).toMatchObject({ kind: "conflict", code: "CREDENTIAL_IN_USE" });
            expect(saved.status).toBe("fulfilled");
            expect((await a.find(`uses-key${round}`))?.credentialsName).toBe(`key${round}`);
            outcomes.add("in use");
          }
        }
        expect(outcomes.size).toBeGreaterThan(0);
      },
    );
  });
});
