import { FEED_KEY_ATTRIBUTES, SUPER_ATTRIBUTE } from "./attributes.js";
import type { AccessNeed, FeedScope, Principal, SystemApi } from "./principal.js";

/** One permission row as the access rules see it: a task's attributes, its scope, grant or deny. */
export interface Grant {
  readonly attributes: readonly string[];
  /** The feed's id, or the lowercased feed group name; both undefined means global. */
  readonly feedId?: number | undefined;
  readonly feedGroup?: string | undefined;
  readonly deny: boolean;
}

/**
 * The access rule for API keys: a System key passes with `full-control` or the need's `api`
 * scope; a Feed key passes only on its own feed (or a feed of its feed group) when one of its
 * permissions carries the attribute. Users and Anonymous are decided by `grantsAllow`.
 */
export function keyAllows(
  principal: Extract<Principal, { type: "system-key" | "feed-key" }>,
  need: AccessNeed,
  scope: FeedScope | undefined,
): boolean {
  if (principal.type === "system-key") {
    if (principal.apis.includes("full-control")) return true;
    if (need.api === undefined) return false;
    const scopes: readonly SystemApi[] = typeof need.api === "string" ? [need.api] : need.api;
    return scopes.some((api) => principal.apis.includes(api));
  }
  if (!scope) return false;
  const onItsFeed =
    (principal.feedId !== undefined && principal.feedId === scope.id) ||
    (principal.feedGroup !== undefined &&
      scope.group !== undefined &&
      principal.feedGroup.toLowerCase() === scope.group.toLowerCase());
  return onItsFeed && principal.permissions.some((p) => FEED_KEY_ATTRIBUTES[p].includes(need.attribute as never));
}

/**
 * The access rule for users and Anonymous: among the grants that apply (global ones, and those
 * for the feed or its group), any deny carrying the attribute wins; otherwise any grant carrying
 * it allows. A global grant of the super attribute (the Administer task) implies every attribute.
 */
export function grantsAllow(grants: readonly Grant[], attribute: string, scope: FeedScope | undefined): boolean {
  let granted = false;
  for (const grant of grants) {
    const global = grant.feedId === undefined && grant.feedGroup === undefined;
    const applies =
      global ||
      (grant.feedId !== undefined && grant.feedId === scope?.id) ||
      (scope?.group !== undefined && grant.feedGroup === scope.group.toLowerCase());
    if (!applies) continue;
    const carries = grant.attributes.includes(attribute);
    if (grant.deny) {
      if (carries) return false;
    } else if (carries || (global && grant.attributes.includes(SUPER_ATTRIBUTE))) {
      granted = true;
    }
  }
  return granted;
}
