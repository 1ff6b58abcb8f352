import { DomainError, invalid, notFound } from "../../domain/errors.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { SecretBox } from "../../storage/secrets.js";
import {
  checkVariableName,
  findVariable,
  MAX_VARIABLE_BYTES,
  parseVariables,
  presentVariables,
  type Variable,
  type Variables,
} from "./variables-model.js";
import {
  createVariablesRepository,
  ENTITY_TYPES,
  type EntityType,
  type VariableScope,
} from "./variables-repository.js";
import { createPostgresVariablesRepository } from "./variables-repository-postgres.js";

export type { EntityType, VariableScope } from "./variables-repository.js";

/**
 * The variables API (docs/compat.md 8.4) over the servers', roles' and environments' `variables`
 * columns and the global_variables table. Environments' variables are the releases area's too,
 * which reads them as plain text: an environment variable cannot be sensitive (400 says where to
 * put one instead). Sensitive values are never answered: objects show `{ value: null, sensitive: true }`,
 * a single GET is 403. The SQL is variables-repository.ts's (both databases).
 */

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

export function createVariablesService(db: MetadataDb, secrets: SecretBox): VariablesService {
  const repository = byDatabase(
    db,
    (sqlite) => createVariablesRepository(sqlite, secrets),
    (postgres) => createPostgresVariablesRepository(postgres, secrets),
  );

  /** Reads the scope's variables, lets `change` alter them, and writes them back, in one transaction. */
  const edit = <T>(scope: VariableScope, change: (variables: Map<string, Variable>) => T): Promise<T> =>
    repository.edit(scope, (variables) => {
      const result = change(variables);
      if (scope.type === "environment") {
        for (const [name, v] of variables) if (v.sensitive) throw sensitiveEnvironment(name);
      }
      return result;
    });
  const read = (scope: VariableScope): Promise<Variables> => repository.read(scope);

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
      const { globals, owners } = await repository.all();
      add(globals, undefined, null);
      for (const owner of owners) add(owner.variables, owner.type, owner.name);
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

function variableNotFound(scope: VariableScope, name: string) {
  const where = scope.type === "global" ? "global variables" : `the ${scope.type} '${scope.name}'`;
  return notFound("VARIABLE_NOT_FOUND", `No variable '${name}' in ${where}.`);
}
