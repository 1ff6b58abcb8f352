import type { Clock } from "../../domain/clock.js";
import { DomainError, notFound } from "../../domain/errors.js";
import { checkEntityName, distinctNames } from "./entity-names.js";
import type { InfrastructureRepository } from "./infrastructure-repository.js";
import { parseConfigItems, showItems } from "./items.js";
import type { RoleRecord, RolesRepository } from "./roles-repository.js";
import type { RoleInput } from "./servers-input.js";
import { parseVariables, presentVariables } from "./variables-model.js";

/**
 * Roles (docs/compat.md 8.2; issue 13 section 1): the desired configuration servers take on, and
 * the roles each depends on (applied first; a cycle is refused, naming it). Shared by
 * `/api/infrastructure/roles/...` and `wharf roles`.
 */
export interface RolesService {
  list(name?: string): Promise<RoleJson[]>;
  get(name: string): Promise<RoleJson>;
  create(name: string, input: RoleInput): Promise<RoleJson>;
  update(name: string, input: RoleInput): Promise<RoleJson>;
  /** conflict ROLE_IN_USE while servers list it or roles depend on it. */
  delete(name: string): Promise<void>;
}

export interface RoleJson {
  readonly name: string;
  readonly description?: string;
  readonly variables: Record<string, unknown>;
  readonly dependsOn: string[];
  readonly items: Record<string, unknown>[];
}

const unprocessable = (code: string, message: string) => new DomainError("unprocessable", code, message);
const roleNotFound = (name: string) => notFound("ROLE_NOT_FOUND", `The role '${name}' was not found.`);

function toJson(record: RoleRecord): RoleJson {
  return {
    name: record.name,
    ...(record.description !== undefined && { description: record.description }),
    variables: presentVariables(record.variables),
    dependsOn: [...record.dependsOn],
    items: showItems(record.items),
  };
}

export function createRolesService(deps: {
  roles: RolesRepository;
  infrastructure: InfrastructureRepository;
  clock: Clock;
}): RolesService {
  const { roles, infrastructure, clock } = deps;
  const now = () => clock.now().toISOString();
  const find = async (name: string) => {
    const record = await roles.find(name);
    if (!record) throw roleNotFound(name);
    return record;
  };

  /**
   * The ids of `names`, refusing a missing role and the role itself; a longer cycle is refused by
   * the repository, in the transaction that saves the dependencies (role-cycles.ts).
   */
  const dependencies = async (roleName: string, names: readonly string[]): Promise<number[]> => {
    const ids: number[] = [];
    for (const name of distinctNames(names)) {
      if (name.toLowerCase() === roleName.toLowerCase()) {
        throw unprocessable(
          "ROLE_CYCLE",
          `The role '${roleName}' cannot depend on itself (${roleName} -> ${roleName}).`,
        );
      }
      const found = await infrastructure.findRole(name);
      if (!found) throw unprocessable("ROLE_NOT_FOUND", `The role '${name}' does not exist.`);
      ids.push(found.id);
    }
    return ids;
  };

  const write = async (name: string, input: RoleInput, current: RoleRecord | undefined) => {
    checkEntityName("role", name);
    // Validated in this order, as before the reads were asynchronous: name, variables, dependencies, items.
    const description = input.description !== undefined ? (input.description ?? null) : (current?.description ?? null);
    const variables =
      input.variables !== undefined
        ? parseVariables(input.variables, "variables", current?.variables)
        : (current?.variables ?? new Map());
    const dependsOnIds = await dependencies(name, input.dependsOn ?? current?.dependsOn ?? []);
    return {
      name,
      description,
      variables,
      dependsOnIds,
      items: input.items !== undefined ? parseConfigItems(input.items, name) : current ? undefined : [],
    };
  };

  return {
    async list(name) {
      if (name !== undefined) return [toJson(await find(name))];
      return (await roles.list()).map(toJson);
    },
    get: async (name) => toJson(await find(name)),
    create: async (name, input) => toJson(await roles.insert(await write(name, input, undefined), now())),
    async update(name, input) {
      const current = await find(name);
      return toJson(await roles.update(current.id, await write(input.name ?? current.name, input, current), now()));
    },
    async delete(name) {
      if (!(await roles.delete(name))) throw roleNotFound(name);
    },
  };
}
