import type { DesiredItem } from "../../drift/model.js";
import type { EntityRef, InfrastructureRepository } from "./infrastructure-repository.js";
import { valuesByLowerName, type Variables } from "./variables-model.js";

/**
 * What a server should look like (issue 13 section 2; research next-areas.md 1.5.5): its items and
 * the variables its file templates see, as the checker and the remediation job hand them to a
 * transport.
 *
 * Items: the server's roles in the order it lists them, each role's dependencies before it (depth
 * first, each role once, however many roles depend on it), then the server's own items (role
 * null). Every item keeps the role that defines it (the seed's `collectionRole`).
 *
 * The same item (type and key) defined twice: the later definition wins, in the place of the
 * first one (so that a directory made early still comes before the files in it), and a line says
 * which definition was overridden. Refusing would make a server unmanageable because of two roles
 * written by different people; a later role (or the server itself) refining an earlier one is what
 * an administrator means by listing it later.
 *
 * Variables: global < environments (by name) < roles (in the order above: a role over its
 * dependencies, a later role over an earlier one) < the server. Names are case-insensitive (the
 * map is keyed by lowercased name). Sensitive values are included: templates need them; they are
 * never logged, and nothing here logs a value.
 */
export interface DesiredState {
  readonly items: readonly DesiredItem[];
  /** Lowercased name -> value, merged as above (RunContext.variables). */
  readonly variables: ReadonlyMap<string, string>;
  /** The roles whose items were taken, in application order (dependencies first). */
  readonly roles: readonly EntityRef[];
}

/** The roles of a server in application order: each listed role preceded by its dependencies. */
export async function expandRoles(repository: InfrastructureRepository, serverId: number): Promise<EntityRef[]> {
  const ordered: EntityRef[] = [];
  const seen = new Set<number>();
  // Cycles are refused on write; `visiting` only keeps a cycle slipped in by hand from looping.
  const visiting = new Set<number>();
  const visit = async (role: EntityRef): Promise<void> => {
    if (seen.has(role.id) || visiting.has(role.id)) return;
    visiting.add(role.id);
    for (const dependency of await repository.roleDependencies(role.id)) await visit(dependency);
    visiting.delete(role.id);
    seen.add(role.id);
    ordered.push(role);
  };
  for (const role of await repository.serverRoles(serverId)) await visit(role);
  return ordered;
}

const itemId = (item: Pick<DesiredItem, "type" | "key">) => `${item.type}\u0000${item.key}`;
const definedBy = (item: DesiredItem) => (item.role === null ? "the server" : `role ${item.role}`);

/**
 * The desired state of a server. `note` hears one line per overridden item (no content, only the
 * item's type and key, and who defined it).
 */
export async function desiredStateOf(
  repository: InfrastructureRepository,
  serverId: number,
  note: (message: string) => void = () => undefined,
): Promise<DesiredState> {
  const roles = await expandRoles(repository, serverId);
  const items: DesiredItem[] = [];
  const positions = new Map<string, number>();
  const add = (item: DesiredItem) => {
    const id = itemId(item);
    const at = positions.get(id);
    if (at === undefined) {
      positions.set(id, items.length);
      items.push(item);
      return;
    }
    const earlier = items[at] as DesiredItem;
    note(`The ${item.type} item ${item.key} of ${definedBy(item)} overrides the one of ${definedBy(earlier)}.`);
    items[at] = item;
  };
  for (const role of roles) for (const item of await repository.roleItems(role.id)) add(item);
  for (const item of await repository.serverItems(serverId)) add(item);

  const layers: Variables[] = [await repository.globalVariables()];
  for (const environment of await repository.serverEnvironments(serverId)) {
    layers.push(await repository.environmentVariables(environment.id));
  }
  for (const role of roles) layers.push(await repository.roleVariables(role.id));
  layers.push(await repository.serverVariables(serverId));
  const variables = new Map<string, string>();
  for (const layer of layers) for (const [name, value] of valuesByLowerName(layer)) variables.set(name, value);

  return { items, variables, roles };
}

/** Only the items a role target remediates: those its role defines (collectionRole = the role). */
export function itemsOfRole(items: readonly DesiredItem[], roleName: string): DesiredItem[] {
  const wanted = roleName.toLowerCase();
  return items.filter((item) => item.role !== null && item.role.toLowerCase() === wanted);
}
