import type { Statement } from "better-sqlite3";
import { DomainError, invalid, notFound } from "../../domain/errors.js";
import { retryWhileBusy } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import {
  checkVariableName,
  findVariable,
  MAX_VARIABLE_BYTES,
  openVariable,
  parseVariables,
  presentVariables,
  readVariableColumn,
  sealVariable,
  type Variable,
  type Variables,
  writeVariableColumn,
} from "./variables-model.js";

/**
 * The variables API (docs/compat.md 8.4) over the servers', roles' and environments' `variables`
 * columns and the global_variables table. Environments' variables are the releases area's too,
 * which reads them as plain text: an environment variable cannot be sensitive (400 says where to
 * put one instead). Sensitive values are never answered: objects show `{ value: null, sensitive: true }`,
 * a single GET is 403.
 */
export type EntityType = "server" | "role" | "environment";
export type VariableScope = { readonly type: EntityType; readonly name: string } | { readonly type: "global" };

export interface ScopedVariable {
  readonly name: string;
  readonly value: string | null;
  readonly sensitive: boolean;
  readonly server: string | null;
  readonly role: string | null;
  readonly environment: string | null;
}

export interface VariablesService {
  getAll(scope: VariableScope): Promise<Record<string, unknown>>;
  /** Replaces every variable of the scope (those missing are deleted). */
  replaceAll(scope: VariableScope, input: unknown): Promise<void>;
  /** The value as text; not_found when absent, forbidden VARIABLE_SENSITIVE when sensitive. */
  getOne(scope: VariableScope, name: string): Promise<string>;
  /** Sets the value; an existing variable keeps its sensitivity, a new one is not sensitive. */
  setOne(scope: VariableScope, name: string, value: string): Promise<void>;
  deleteOne(scope: VariableScope, name: string): Promise<void>;
  /** Every variable of every scope (`scoped/all`). */
  scopedAll(): Promise<ScopedVariable[]>;
  /** `scoped/single` set: `{ name, value, sensitive, server | role | environment }` (none: global). */
  setScoped(input: unknown): Promise<void>;
  /** `scoped/single` delete: `{ name, server | role | environment }`. */
  deleteScoped(input: unknown): Promise<void>;
}

interface ColumnStatements {
  readonly get: Statement<[string], { id: number; variables: string }>;
  readonly set: Statement<[string, number]>;
  readonly all: Statement<[], { name: string; variables: string }>;
}

const TABLES: Readonly<Record<EntityType, string>> = { server: "servers", role: "roles", environment: "environments" };
const ENTITY_TYPES = Object.keys(TABLES) as EntityType[];

export function parseEntityType(text: string): EntityType {
  const value = text.toLowerCase().replace(/s$/, "");
  if (!(ENTITY_TYPES as string[]).includes(value)) {
    throw invalid("INVALID_ENTITY_TYPE", `The variable scope '${text}' must be server, role, environment or global.`);
  }
  return value as EntityType;
}

const sensitiveEnvironment = (name: string) =>
  invalid(
    "ENVIRONMENT_VARIABLE_SENSITIVE",
    `The environment variable '${name}' cannot be sensitive: Wharf's releases read environments' variables as plain text. ` +
      "Put a sensitive variable on a server, a role or globally.",
  );

export function createVariablesService(db: Db, secrets: SecretBox): VariablesService {
  const q = {
    column: Object.fromEntries(
      ENTITY_TYPES.map((type) => [
        type,
        {
          get: db.prepare<[string], { id: number; variables: string }>(
            `SELECT id, variables FROM ${TABLES[type]} WHERE name_key = ?`,
          ),
          set: db.prepare<[string, number]>(`UPDATE ${TABLES[type]} SET variables = ? WHERE id = ?`),
          all: db.prepare<[], { name: string; variables: string }>(
            `SELECT name, variables FROM ${TABLES[type]} ORDER BY name_key`,
          ),
        },
      ]),
    ) as Record<EntityType, ColumnStatements>,
    globals: db.prepare<[], { name: string; value: string; sensitive: number }>(
      "SELECT name, value, sensitive FROM global_variables ORDER BY name_key",
    ),
    clearGlobals: db.prepare("DELETE FROM global_variables"),
    deleteGlobal: db.prepare<[string]>("DELETE FROM global_variables WHERE name_key = ?"),
    putGlobal: db.prepare<[string, string, string, number]>(
      `INSERT INTO global_variables (name, name_key, value, sensitive) VALUES (?, ?, ?, ?)
       ON CONFLICT (name_key) DO UPDATE SET name = excluded.name, value = excluded.value, sensitive = excluded.sensitive`,
    ),
  };

  /** Reads the scope's variables, lets `change` alter them, and writes them back, in one transaction. */
  const edit = <T>(scope: VariableScope, change: (variables: Map<string, Variable>) => T): Promise<T> =>
    retryWhileBusy(db, () =>
      db.transaction(() => {
        if (scope.type === "global") {
          const variables = readGlobals();
          const result = change(variables);
          q.clearGlobals.run();
          for (const [name, v] of variables) {
            const stored = v.sensitive ? sealVariable(v.value, secrets) : v.value;
            q.putGlobal.run(name, name.toLowerCase(), stored, v.sensitive ? 1 : 0);
          }
          return result;
        }
        const statements = q.column[scope.type];
        const row = statements.get.get(scope.name.toLowerCase());
        if (!row) throw entityNotFound(scope);
        const variables = readVariableColumn(row.variables, secrets);
        const result = change(variables);
        if (scope.type === "environment") {
          for (const [name, v] of variables) if (v.sensitive) throw sensitiveEnvironment(name);
        }
        statements.set.run(writeVariableColumn(variables, secrets), row.id);
        return result;
      })(),
    );
  const readGlobals = () =>
    new Map(
      q.globals.all().map((row) => {
        const sensitive = row.sensitive === 1;
        return [row.name, { value: sensitive ? openVariable(row.value, secrets) : row.value, sensitive }];
      }),
    );
  const read = async (scope: VariableScope): Promise<Variables> => {
    if (scope.type === "global") return readGlobals();
    const row = q.column[scope.type].get.get(scope.name.toLowerCase());
    if (!row) throw entityNotFound(scope);
    return readVariableColumn(row.variables, secrets);
  };

  const scopeOf = (input: Record<string, unknown>): VariableScope => {
    const given = ENTITY_TYPES.filter((type) => typeof input[type] === "string" && input[type] !== "");
    if (given.length > 1) {
      throw invalid(
        "VARIABLE_SCOPE_AMBIGUOUS",
        `A Wharf variable belongs to one server, role or environment (or none: global); got ${given.join(" and ")}.`,
      );
    }
    const type = given[0];
    return type === undefined ? { type: "global" } : { type, name: input[type] as string };
  };
  const scopedBody = (input: unknown): Record<string, unknown> => {
    if (!input || typeof input !== "object" || Array.isArray(input)) {
      throw invalid(
        "INVALID_BODY",
        "The body must be a JSON object: { name, value, sensitive, server | role | environment }.",
      );
    }
    const body = Object.fromEntries(Object.entries(input).map(([k, v]) => [k.toLowerCase(), v]));
    if (typeof body.name !== "string") throw invalid("MISSING_PARAMETER", "The body needs the variable's 'name'.");
    return body;
  };

  return {
    getAll: async (scope) => presentVariables(await read(scope)),
    async replaceAll(scope, input) {
      // `{}` deletes every variable, as asked; no body at all is more likely a mistake than that.
      if (input === undefined || input === null) {
        throw invalid("MISSING_BODY", "Send the variables as a JSON object ({} deletes them all).");
      }
      await edit(scope, (variables) => {
        const next = parseVariables(input, "body", variables);
        variables.clear();
        for (const [name, v] of next) variables.set(name, v);
      });
    },
    async getOne(scope, name) {
      const found = findVariable(await read(scope), name);
      if (!found) throw variableNotFound(scope, name);
      if (found[1].sensitive) {
        throw new DomainError(
          "forbidden",
          "VARIABLE_SENSITIVE",
          `The variable '${found[0]}' is sensitive: its value is never answered.`,
        );
      }
      return found[1].value;
    },
    async setOne(scope, name, value) {
      checkVariableName(name);
      checkSize(name, value);
      await edit(scope, (variables) => {
        const found = findVariable(variables, name);
        if (found) variables.delete(found[0]);
        variables.set(found?.[0] ?? name, { value, sensitive: found?.[1].sensitive ?? false });
      });
    },
    async deleteOne(scope, name) {
      await edit(scope, (variables) => {
        const found = findVariable(variables, name);
        if (!found) throw variableNotFound(scope, name);
        variables.delete(found[0]);
      });
    },
    async scopedAll() {
      const out: ScopedVariable[] = [];
      const add = (variables: Variables, type: EntityType | undefined, owner: string | null) => {
        for (const [name, v] of variables) {
          out.push({
            name,
            value: v.sensitive ? null : v.value,
            sensitive: v.sensitive,
            server: type === "server" ? owner : null,
            role: type === "role" ? owner : null,
            environment: type === "environment" ? owner : null,
          });
        }
      };
      add(readGlobals(), undefined, null);
      for (const type of ENTITY_TYPES) {
        for (const row of q.column[type].all.all()) {
          add(readVariableColumn(row.variables, secrets), type, row.name);
        }
      }
      return out;
    },
    async setScoped(input) {
      const body = scopedBody(input);
      const name = body.name as string;
      checkVariableName(name);
      const raw = body.value;
      if (typeof raw !== "string" && typeof raw !== "number" && typeof raw !== "boolean") {
        throw invalid("MISSING_PARAMETER", "The body needs the variable's 'value' (text).");
      }
      if (body.sensitive !== undefined && body.sensitive !== null && typeof body.sensitive !== "boolean") {
        throw invalid("INVALID_PARAMETER", "'sensitive' must be true or false.");
      }
      const value = String(raw);
      checkSize(name, value);
      const scope = scopeOf(body);
      await edit(scope, (variables) => {
        const found = findVariable(variables, name);
        if (found) variables.delete(found[0]);
        const sensitive = typeof body.sensitive === "boolean" ? body.sensitive : (found?.[1].sensitive ?? false);
        variables.set(found?.[0] ?? name, { value, sensitive });
      });
    },
    async deleteScoped(input) {
      const body = scopedBody(input);
      await this.deleteOne(scopeOf(body), body.name as string);
    },
  };
}

function checkSize(name: string, value: string): void {
  if (Buffer.byteLength(value) > MAX_VARIABLE_BYTES) {
    throw invalid("VARIABLE_TOO_LARGE", `The variable '${name}' is over ${MAX_VARIABLE_BYTES} bytes.`);
  }
}

function entityNotFound(scope: Exclude<VariableScope, { type: "global" }>) {
  switch (scope.type) {
    case "server":
      return notFound("SERVER_NOT_FOUND", `The server '${scope.name}' was not found.`);
    case "role":
      return notFound("ROLE_NOT_FOUND", `The role '${scope.name}' was not found.`);
    default:
      return notFound("ENVIRONMENT_NOT_FOUND", `The environment '${scope.name}' was not found.`);
  }
}

function variableNotFound(scope: VariableScope, name: string) {
  const where = scope.type === "global" ? "global variables" : `the ${scope.type} '${scope.name}'`;
  return notFound("VARIABLE_NOT_FOUND", `No variable '${name}' in ${where}.`);
}
