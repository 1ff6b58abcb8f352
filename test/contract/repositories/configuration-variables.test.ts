import { beforeAll, expect, it } from "vitest";
import type { Variable } from "../../../src/areas/configuration/variables-model.js";
import {
  createVariablesRepository,
  type VariablesRepository,
} from "../../../src/areas/configuration/variables-repository.js";
import { createPostgresVariablesRepository } from "../../../src/areas/configuration/variables-repository-postgres.js";
import { DomainError } from "../../../src/domain/errors.js";
import type { PostgresDb } from "../../../src/storage/postgres/database.js";
import { createSecretBox, generateSecretKey, parseSecretKey, type SecretKey } from "../../../src/storage/secrets.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { itOnPostgres, otherNodesForBlock, whileHeld } from "../../helpers/postgres-races.js";
import { insertServer } from "../../helpers/seed-rows.js";

/**
 * The variables API's SQL (variables-repository.ts) on both databases: reads of each scope, edits
 * as one read-change-write, every variable at once; on PostgreSQL, two nodes editing one scope at
 * once both keep their change (the row, or the global table, is locked first).
 */
const T1 = "2026-11-29T10:00:00.000Z";
const secrets = createSecretBox(parseSecretKey(generateSecretKey()) as SecretKey);

const repositoryOn = (database: TestDatabase): VariablesRepository =>
  database.kind === "sqlite"
    ? createVariablesRepository(database.sqlite, secrets)
    : createPostgresVariablesRepository(database.postgres, secrets);
const repositoryOfNode = (node: PostgresDb) => createPostgresVariablesRepository(node, secrets);

const plain = (value: string): Variable => ({ value, sensitive: false });
const set =
  (name: string, variable: Variable) =>
  (variables: Map<string, Variable>): number => {
    variables.set(name, variable);
    return variables.size;
  };

describeOnBothDatabases("Configuration variables repository", (database) => {
  let variables: VariablesRepository;
  const otherNode = otherNodesForBlock(database);
  const raceIt = itOnPostgres(database);

  beforeAll(async () => {
    variables = repositoryOn(database());
    await insertServer(database().exec, "Web", T1, { type: "local" });
    await database().exec(
      "INSERT INTO roles (name, name_key, variables, created_at, modified_at) VALUES ('Base', 'base', '{}', ?, ?)",
      [T1, T1],
    );
    await database().exec("INSERT INTO environments (name, name_key) VALUES ('Prod', 'prod')");
  });

  it("edits a server's variables by its name in any case, sealing sensitive ones, and reads them back", async () => {
    expect(await variables.edit({ type: "server", name: "WEB" }, set("Port", plain("80")))).toBe(1);
    expect(
      await variables.edit({ type: "server", name: "web" }, set("Key", { value: "s3cret", sensitive: true })),
    ).toBe(2);
    expect(await variables.read({ type: "server", name: "Web" })).toEqual(
      new Map([
        ["Port", plain("80")],
        ["Key", { value: "s3cret", sensitive: true }],
      ]),
    );
    const [row] = await database().exec("SELECT variables FROM servers WHERE name_key = 'web'");
    expect(String(row?.variables)).not.toContain("s3cret");
  });

  it("edits global variables as a whole: renamed, removed, sensitive sealed", async () => {
    await variables.edit({ type: "global" }, (all) => {
      all.set("Region", plain("eu"));
      all.set("Token", { value: "t0ken", sensitive: true });
    });
    await variables.edit({ type: "global" }, (all) => {
      all.delete("Region");
      all.set("REGION", plain("us"));
    });
    expect(await variables.read({ type: "global" })).toEqual(
      new Map([
        ["REGION", plain("us")],
        ["Token", { value: "t0ken", sensitive: true }],
      ]),
    );
    const rows = await database().exec(
      "SELECT name, name_key, value, sensitive FROM global_variables ORDER BY name_key",
    );
    expect(rows.map((r) => [r.name, r.name_key, r.sensitive])).toEqual([
      ["REGION", "region", 0],
      ["Token", "token", 1],
    ]);
    expect(String(rows[1]?.value)).not.toBe("t0ken");
  });

  it("writes nothing when the change throws, and is not found for an unknown entity", async () => {
    await expect(
      variables.edit({ type: "role", name: "Base" }, (all) => {
        all.set("X", plain("1"));
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect(await variables.read({ type: "role", name: "base" })).toEqual(new Map());
    for (const type of ["server", "role", "environment"] as const) {
      await expect(variables.read({ type, name: "nope" })).rejects.toBeInstanceOf(DomainError);
      await expect(variables.edit({ type, name: "nope" }, () => undefined)).rejects.toMatchObject({
        kind: "not_found",
      });
    }
  });

  it("reads every variable: globals, then servers, roles and environments by name", async () => {
    await variables.edit({ type: "environment", name: "prod" }, set("Stage", plain("prod")));
    const { globals, owners } = await variables.all();
    expect([...globals.keys()]).toEqual(["REGION", "Token"]);
    expect(owners.map((o) => [o.type, o.name, [...o.variables.keys()]])).toEqual([
      ["server", "Web", ["Port", "Key"]],
      ["role", "Base", []],
      ["environment", "Prod", ["Stage"]],
    ]);
  });

  raceIt("keeps both of two nodes' concurrent edits of one server's variables", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const [a, b] = [repositoryOfNode(otherNode()), repositoryOfNode(otherNode())];
    await whileHeld(db.postgres.pool, {
      hold: (holder) => holder.query("SELECT id FROM servers WHERE name_key = 'web' FOR UPDATE"),
      race: () =>
        Promise.all([
          a.edit({ type: "server", name: "web" }, set("FromA", plain("a"))),
          b.edit({ type: "server", name: "web" }, set("FromB", plain("b"))),
        ]),
      waiters: 2,
    });
    expect([...(await variables.read({ type: "server", name: "web" })).keys()].sort()).toEqual([
      "FromA",
      "FromB",
      "Key",
      "Port",
    ]);
  });

  raceIt("keeps both of two nodes' concurrent edits of the global variables", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const [a, b] = [repositoryOfNode(otherNode()), repositoryOfNode(otherNode())];
    await whileHeld(db.postgres.pool, {
      hold: (holder) => holder.query("LOCK TABLE global_variables IN EXCLUSIVE MODE"),
      race: () =>
        Promise.all([
          a.edit({ type: "global" }, set("GlobalA", plain("a"))),
          b.edit({ type: "global" }, set("GlobalB", plain("b"))),
        ]),
      waiters: 2,
    });
    expect([...(await variables.read({ type: "global" })).keys()].sort()).toEqual([
      "GlobalA",
      "GlobalB",
      "REGION",
      "Token",
    ]);
  });

  raceIt("answers not found to an edit that waited for the server's deletion", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    await insertServer(database().exec, "Gone", T1, { type: "local" });
    const other = repositoryOfNode(otherNode());
    const outcome = await whileHeld(db.postgres.pool, {
      hold: (holder) => holder.query("DELETE FROM servers WHERE name_key = 'gone'"),
      race: () => other.edit({ type: "server", name: "gone" }, set("X", plain("1"))).catch((error: unknown) => error),
      waiters: 1,
    });
    expect(outcome).toMatchObject({ kind: "not_found", code: "SERVER_NOT_FOUND" });
  });
});
