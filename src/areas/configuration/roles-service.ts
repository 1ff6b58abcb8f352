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

  /** The ids of `names`, refusing a missing role and any cycle the new edges would close. */
  const dependencies = (roleName: string, roleId: number | undefined, names: readonly string[]): number[] => {
    const ids: number[] = [];
    for (const name of distinctNames(names)) {
      if (name.toLowerCase() === roleName.toLowerCase()) {
        throw unprocessable(
          "ROLE_CYCLE",
          `The role '${roleName}' cannot depend on itself (${roleName} -> ${roleName}).`,
        );
      }
      const found = infrastructure.findRole(name);
      if (!found) throw unprocessable("ROLE_NOT_FOUND", `The role '${name}' does not exist.`);
      ids.push(found.id);
    }
    if (roleId === undefined) return ids; // nothing can depend on a role not created yet
    const { edges, names: roleNames } = roles.dependencyGraph();
    edges.set(roleId, ids);
    // A path from one of the new dependencies back to the role closes a cycle.
    const path: number[] = [];
    const visited = new Set<number>();
    const reaches = (from: number): boolean => {
      if (from === roleId) return true;
      if (visited.has(from)) return false;
      visited.add(from);
      path.push(from);
      for (const next of edges.get(from) ?? []) if (reaches(next)) return true;
      path.pop();
      return false;
    };
    for (const start of ids) {
      if (reaches(start)) {
        const cycle = [roleName, ...path.map((id) => roleNames.get(id) ?? String(id)), roleName].join(" -> ");
        throw unprocessable("ROLE_CYCLE", `The role dependencies would form a cycle: ${cycle}.`);
      }
    }
    return ids;
  };

  const write = (name: string, input: RoleInput, current: RoleRecord | undefined) => {
    checkEntityName("role", name);
    return {
      name,
      description: input.description !== undefined ? (input.description ?? null) : (current?.description ?? null),
      variables:
        input.variables !== undefined
          ? parseVariables(input.variables, "variables", current?.variables)
          : (current?.variables ?? new Map()),
      dependsOnIds: dependencies(name, current?.id, input.dependsOn ?? current?.dependsOn ?? []),
      items: input.items !== undefined ? parseConfigItems(input.items, name) : current ? undefined : [],
    };
  };

  return {
    async list(name) {
      if (name !== undefined) return [toJson(await find(name))];
      return (await roles.list()).map(toJson);
    },
    get: async (name) => toJson(await find(name)),
    create: async (name, input) => toJson(await roles.insert(write(name, input, undefined), now())),
    async update(name, input) {
      const current = await find(name);
      return toJson(await roles.update(current.id, write(input.name ?? current.name, input, current), now()));
    },
    async delete(name) {
      if (!(await roles.delete(name))) throw roleNotFound(name);
    },
  };
}
