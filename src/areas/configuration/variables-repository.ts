import type { Statement } from "better-sqlite3";
import { notFound } from "../../domain/errors.js";
import { retryWhileBusy } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { type GlobalVariableRow, globalVariablesOf } from "./infrastructure-repository.js";
import {
  readVariableColumn,
  sealVariable,
  type Variable,
  type Variables,
  writeVariableColumn,
} from "./variables-model.js";

/**
 * The SQL of the variables API (variables-service.ts): the servers', roles' and environments'
 * `variables` columns and the global_variables table, read, and edited as a whole in one
 * transaction (read, change, write back: two edits of one scope never lose one another's change).
 * Asynchronous (PostgreSQL in cluster mode: variables-repository-postgres.ts); on SQLite each
 * method is still one synchronous statement or transaction, an edit retried while another process
 * holds the write lock.
 */
export type EntityType = "server" | "role" | "environment";
export type VariableScope = { readonly type: EntityType; readonly name: string } | { readonly type: "global" };

export interface OwnedVariables {
  readonly type: EntityType;
  readonly name: string;
  readonly variables: Variables;
}

export interface VariablesRepository {
  /** The scope's variables, sensitive values opened; not_found for an unknown server, role or environment. */
  read(scope: VariableScope): Promise<Variables>;
  /**
   * Reads the scope's variables, lets `change` alter them (or throw: nothing is written), and writes
   * them back, in one transaction; `change`'s result.
   */
  edit<T>(scope: VariableScope, change: (variables: Map<string, Variable>) => T): Promise<T>;
  /** Every variable: the globals, then each server's, role's and environment's, by kind and name. */
  all(): Promise<{ readonly globals: Variables; readonly owners: readonly OwnedVariables[] }>;
}

export const VARIABLE_TABLES: Readonly<Record<EntityType, string>> = {
  server: "servers",
  role: "roles",
  environment: "environments",
};
export const ENTITY_TYPES = Object.keys(VARIABLE_TABLES) as EntityType[];

/** Global variables as stored: sensitive values sealed. */
export function globalRowsOf(variables: Variables, secrets: SecretBox): GlobalVariableRow[] {
  return [...variables].map(([name, v]) => ({
    name,
    value: v.sensitive ? sealVariable(v.value, secrets) : v.value,
    sensitive: v.sensitive ? 1 : 0,
  }));
}

export function entityNotFound(scope: Exclude<VariableScope, { type: "global" }>) {
  switch (scope.type) {
    case "server":
      return notFound("SERVER_NOT_FOUND", `The server '${scope.name}' was not found.`);
    case "role":
      return notFound("ROLE_NOT_FOUND", `The role '${scope.name}' was not found.`);
    default:
      return notFound("ENVIRONMENT_NOT_FOUND", `The environment '${scope.name}' was not found.`);
  }
}

interface ColumnStatements {
  readonly get: Statement<[string], { id: number; variables: string }>;
  readonly set: Statement<[string, number]>;
  readonly all: Statement<[], { name: string; variables: string }>;
}

export function createVariablesRepository(db: Db, secrets: SecretBox): VariablesRepository {
  const q = {
    column: Object.fromEntries(
      ENTITY_TYPES.map((type) => [
        type,
        {
          get: db.prepare<[string], { id: number; variables: string }>(
            `SELECT id, variables FROM ${VARIABLE_TABLES[type]} WHERE name_key = ?`,
          ),
          set: db.prepare<[string, number]>(`UPDATE ${VARIABLE_TABLES[type]} SET variables = ? WHERE id = ?`),
          all: db.prepare<[], { name: string; variables: string }>(
            `SELECT name, variables FROM ${VARIABLE_TABLES[type]} ORDER BY name_key`,
          ),
        },
      ]),
    ) as Record<EntityType, ColumnStatements>,
    globals: db.prepare<[], GlobalVariableRow>("SELECT name, value, sensitive FROM global_variables ORDER BY name_key"),
    clearGlobals: db.prepare("DELETE FROM global_variables"),
    putGlobal: db.prepare<[string, string, string, number]>(
      `INSERT INTO global_variables (name, name_key, value, sensitive) VALUES (?, ?, ?, ?)
       ON CONFLICT (name_key) DO UPDATE SET name = excluded.name, value = excluded.value, sensitive = excluded.sensitive`,
    ),
  };
  const readGlobals = () => globalVariablesOf(q.globals.all(), secrets);

  return {
    async read(scope) {
      if (scope.type === "global") return readGlobals();
      const row = q.column[scope.type].get.get(scope.name.toLowerCase());
      if (!row) throw entityNotFound(scope);
      return readVariableColumn(row.variables, secrets);
    },
    edit: (scope, change) =>
      retryWhileBusy(db, () =>
        db.transaction(() => {
          if (scope.type === "global") {
            const variables = new Map(readGlobals());
            const result = change(variables);
            q.clearGlobals.run();
            for (const row of globalRowsOf(variables, secrets)) {
              q.putGlobal.run(row.name, row.name.toLowerCase(), row.value, row.sensitive);
            }
            return result;
          }
          const statements = q.column[scope.type];
          const row = statements.get.get(scope.name.toLowerCase());
          if (!row) throw entityNotFound(scope);
          const variables = readVariableColumn(row.variables, secrets);
          const result = change(variables);
          statements.set.run(writeVariableColumn(variables, secrets), row.id);
          return result;
        })(),
      ),
    async all() {
      return {
        globals: readGlobals(),
        owners: ENTITY_TYPES.flatMap((type) =>
          q.column[type].all
            .all()
            .map((row) => ({ type, name: row.name, variables: readVariableColumn(row.variables, secrets) })),
        ),
      };
    },
  };
}
