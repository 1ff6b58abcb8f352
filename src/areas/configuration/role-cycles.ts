import { DomainError } from "../../domain/errors.js";

/**
 * Refuses dependencies that would close a cycle (issue 13: roles are applied after the roles they
 * depend on, so a cycle has no order): 422 ROLE_CYCLE naming it, e.g. `a -> c -> b -> a`.
 * `edges`: every role's dependencies as stored; `dependsOn`: what `roleId` is about to depend on.
 */
export function refuseCycle(
  edges: ReadonlyMap<number, readonly number[]>,
  names: ReadonlyMap<number, string>,
  role: { readonly id: number; readonly name: string },
  dependsOn: readonly number[],
): void {
  const next = (id: number) => (id === role.id ? dependsOn : (edges.get(id) ?? []));
  const visited = new Set<number>();
  // Depth-first without recursion (a chain of many roles must not overflow the stack): each frame
  // is a role on the current path and the index of its next dependency to follow.
  for (const start of dependsOn) {
    const path: { id: number; index: number }[] = [{ id: start, index: 0 }];
    while (path.length > 0) {
      const top = path[path.length - 1] as { id: number; index: number };
      if (top.id === role.id) {
        const cycle = [
          role.name,
          ...path.slice(0, -1).map((frame) => names.get(frame.id) ?? String(frame.id)),
          role.name,
        ];
        throw new DomainError(
          "unprocessable",
          "ROLE_CYCLE",
          `The role dependencies would form a cycle: ${cycle.join(" -> ")}.`,
        );
      }
      const children = next(top.id);
      if (top.index === 0 && visited.has(top.id)) {
        path.pop();
        continue;
      }
      visited.add(top.id);
      const child = children[top.index];
      if (child === undefined) {
        path.pop();
        continue;
      }
      top.index += 1;
      path.push({ id: child, index: 0 });
    }
  }
}
