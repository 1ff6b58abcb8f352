import { describe, expect, it } from "vitest";
import { type Grant, grantsAllow, keyAllows } from "../../src/domain/access.js";
import { ATTRIBUTES } from "../../src/domain/attributes.js";
import type { AccessNeed, FeedKeyPermission, FeedScope, Principal, SystemApi } from "../../src/domain/principal.js";

/** The access rules of domain/access.ts, table by table. */

type KeyPrincipal = Extract<Principal, { type: "system-key" | "feed-key" }>;

const systemKey = (...apis: SystemApi[]): KeyPrincipal => ({ type: "system-key", keyId: 1, apis });
const feedKey = (
  target: { feedId?: number; feedGroup?: string },
  ...permissions: FeedKeyPermission[]
): KeyPrincipal => ({
  type: "feed-key",
  keyId: 2,
  feedId: target.feedId,
  feedGroup: target.feedGroup,
  permissions,
});
/** Feed ids: keys and grants match a feed's id, never its name (which a later feed may take). */
const MAIN = 1;
const OTHER = 2;
const A = 3;
const scope = (id: number | undefined, group?: string, name = `feed-${id}`): FeedScope => ({ id, name, group });

describe("keyAllows: System keys", () => {
  const admin: AccessNeed = { api: "full-control", attribute: "Admin_ConfigureProGet" };
  const feedsNeed: AccessNeed = { api: "feeds", attribute: "Feeds_ViewFeed", feed: "main" };
  const onlyFullControl: AccessNeed = { attribute: "Admin_ConfigureProGet" };

  it.each<[string, KeyPrincipal, AccessNeed, FeedScope | undefined, boolean]>([
    ["full-control passes an admin need", systemKey("full-control"), admin, undefined, true],
    ["full-control passes a feeds need", systemKey("full-control"), feedsNeed, scope(MAIN), true],
    ["full-control passes a need with no api", systemKey("full-control"), onlyFullControl, undefined, true],
    ["the need's own api passes", systemKey("feeds"), feedsNeed, scope(MAIN), true],
    ["one of several apis passes", systemKey("metrics", "feeds"), feedsNeed, scope(MAIN), true],
    ["another api does not pass", systemKey("metrics"), feedsNeed, scope(MAIN), false],
    ["feeds does not pass an admin need", systemKey("feeds"), admin, undefined, false],
    ["no api never passes a need with no api", systemKey("feeds", "metrics"), onlyFullControl, undefined, false],
    ["a key with no apis passes nothing", systemKey(), feedsNeed, scope(MAIN), false],
  ])("%s", (_name, principal, need, feed, expected) => {
    expect(keyAllows(principal, need, feed)).toBe(expected);
  });
});

describe("keyAllows: Feed keys", () => {
  const need = (attribute: string, feed?: string): AccessNeed => ({
    api: "feeds",
    attribute,
    ...(feed === undefined ? {} : { feed }),
  });

  it.each<[string, KeyPrincipal, AccessNeed, FeedScope | undefined, boolean]>([
    ["view on its feed", feedKey({ feedId: MAIN }, "view"), need("Feeds_ViewFeed", "main"), scope(MAIN), true],
    [
      "its feed renamed (same id, another name)",
      feedKey({ feedId: MAIN }, "view"),
      need("Feeds_DownloadPackage", "renamed"),
      scope(MAIN, undefined, "renamed"),
      true,
    ],
    [
      "a new feed under its feed's old name (another id)",
      feedKey({ feedId: MAIN }, "view"),
      need("Feeds_DownloadPackage", "main"),
      scope(OTHER, undefined, "main"),
      false,
    ],
    ["a feed no feed has (no id)", feedKey({ feedId: MAIN }, "view"), need("Feeds_ViewFeed"), scope(undefined), false],
    ["view on another feed", feedKey({ feedId: MAIN }, "view"), need("Feeds_ViewFeed"), scope(OTHER), false],
    [
      "any need with no feed",
      feedKey({ feedId: MAIN }, "view", "add", "promote", "delete"),
      need("Feeds_ViewFeed"),
      undefined,
      false,
    ],
    [
      "an admin need",
      feedKey({ feedId: MAIN }, "view", "add", "promote", "delete"),
      need("Admin_ConfigureProGet"),
      scope(MAIN),
      false,
    ],
    [
      "managing its own feed",
      feedKey({ feedId: MAIN }, "view", "add", "promote", "delete"),
      need("Admin_ManageFeed"),
      scope(MAIN),
      false,
    ],
    ["view does not add", feedKey({ feedId: MAIN }, "view"), need("Feeds_AddPackage"), scope(MAIN), false],
    ["add adds and pulls", feedKey({ feedId: MAIN }, "add"), need("Feeds_PullPackage"), scope(MAIN), true],
    ["add does not view", feedKey({ feedId: MAIN }, "add"), need("Feeds_ViewFeed"), scope(MAIN), false],
    [
      "promote accepts promotions",
      feedKey({ feedId: MAIN }, "promote"),
      need("Feeds_AcceptPackagePromotions"),
      scope(MAIN),
      true,
    ],
    ["delete overwrites", feedKey({ feedId: MAIN }, "delete"), need("Feeds_OverwritePackage"), scope(MAIN), true],
    ["delete deletes", feedKey({ feedId: MAIN }, "delete"), need("Feeds_DeletePackage"), scope(MAIN), true],
    ["delete unlists", feedKey({ feedId: MAIN }, "delete"), need("Feeds_UnlistPackage"), scope(MAIN), true],
    ["delete does not add", feedKey({ feedId: MAIN }, "delete"), need("Feeds_AddPackage"), scope(MAIN), false],
    [
      "a group key on a feed of its group",
      feedKey({ feedGroup: "Team" }, "view"),
      need("Feeds_ViewFeed"),
      scope(A, "team"),
      true,
    ],
    [
      "a group key on a feed of another group",
      feedKey({ feedGroup: "team" }, "view"),
      need("Feeds_ViewFeed"),
      scope(A, "ops"),
      false,
    ],
    [
      "a group key on a feed of no group",
      feedKey({ feedGroup: "team" }, "view"),
      need("Feeds_ViewFeed"),
      scope(A),
      false,
    ],
    [
      "a feed key whose feed is in a group",
      feedKey({ feedId: A }, "view"),
      need("Feeds_ViewFeed"),
      scope(A, "team"),
      true,
    ],
    ["a key with no permissions", feedKey({ feedId: MAIN }), need("Feeds_ViewFeed"), scope(MAIN), false],
  ])("%s", (_name, principal, need, feed, expected) => {
    expect(keyAllows(principal, need, feed)).toBe(expected);
  });

  it("maps each permission word to exactly its attributes", () => {
    const words: FeedKeyPermission[] = ["view", "add", "promote", "delete"];
    const expected: Record<FeedKeyPermission, string[]> = {
      view: ["Feeds_ViewFeed", "Feeds_DownloadPackage"],
      add: ["Feeds_AddPackage", "Feeds_PullPackage"],
      promote: ["Feeds_AcceptPackagePromotions"],
      delete: ["Feeds_OverwritePackage", "Feeds_DeletePackage", "Feeds_UnlistPackage"],
    };
    for (const word of words) {
      const allowed = ATTRIBUTES.filter((attribute) =>
        keyAllows(feedKey({ feedId: MAIN }, word), { attribute, feed: "main" }, scope(MAIN)),
      );
      expect(allowed, word).toEqual(expected[word]);
    }
  });
});

describe("grantsAllow", () => {
  const view = ["Feeds_ViewFeed", "Feeds_DownloadPackage"];
  const administer = [...ATTRIBUTES];
  const g = (
    attributes: readonly string[],
    where: { feedId?: number; feedGroup?: string } = {},
    deny = false,
  ): Grant => ({
    attributes,
    ...where,
    deny,
  });

  it.each<[string, Grant[], string, FeedScope | undefined, boolean]>([
    ["nothing granted", [], "Feeds_ViewFeed", scope(MAIN), false],
    ["a global grant, on a feed", [g(view)], "Feeds_ViewFeed", scope(MAIN), true],
    ["a global grant, on no feed", [g(view)], "Feeds_ViewFeed", undefined, true],
    ["a grant without the attribute", [g(view)], "Feeds_AddPackage", scope(MAIN), false],
    ["a feed grant on its feed", [g(view, { feedId: MAIN })], "Feeds_ViewFeed", scope(MAIN), true],
    [
      "a feed grant on its feed renamed",
      [g(view, { feedId: MAIN })],
      "Feeds_ViewFeed",
      scope(MAIN, undefined, "renamed"),
      true,
    ],
    [
      "a feed grant on a new feed under its feed's old name",
      [g(view, { feedId: MAIN })],
      "Feeds_ViewFeed",
      scope(OTHER, undefined, "feed-1"),
      false,
    ],
    ["a feed grant on an unknown feed", [g(view, { feedId: MAIN })], "Feeds_ViewFeed", scope(undefined), false],
    [
      "a feed-group grant on a group need (no feed id)",
      [g(view, { feedGroup: "team" })],
      "Feeds_ViewFeed",
      scope(undefined, "team"),
      true,
    ],
    ["a feed grant on another feed", [g(view, { feedId: MAIN })], "Feeds_ViewFeed", scope(OTHER), false],
    ["a feed grant on a need with no feed", [g(view, { feedId: MAIN })], "Feeds_ViewFeed", undefined, false],
    [
      "a feed-group grant on a feed of the group",
      [g(view, { feedGroup: "team" })],
      "Feeds_ViewFeed",
      scope(A, "Team"),
      true,
    ],
    [
      "a feed-group grant on a feed of another group",
      [g(view, { feedGroup: "team" })],
      "Feeds_ViewFeed",
      scope(A, "ops"),
      false,
    ],
    ["a feed-group grant on a feed of no group", [g(view, { feedGroup: "team" })], "Feeds_ViewFeed", scope(A), false],
    [
      "a feed-group grant named like the feed",
      [g(view, { feedGroup: "main" })],
      "Feeds_ViewFeed",
      scope(MAIN, undefined, "main"),
      false,
    ],
    ["a global deny beats a global grant", [g(view), g(view, {}, true)], "Feeds_ViewFeed", scope(MAIN), false],
    ["a deny listed first still wins", [g(view, {}, true), g(view)], "Feeds_ViewFeed", scope(MAIN), false],
    [
      "a feed deny beats a global grant on that feed",
      [g(view), g(view, { feedId: MAIN }, true)],
      "Feeds_ViewFeed",
      scope(MAIN),
      false,
    ],
    [
      "a feed deny leaves other feeds alone",
      [g(view), g(view, { feedId: MAIN }, true)],
      "Feeds_ViewFeed",
      scope(OTHER),
      true,
    ],
    [
      "a feed deny leaves global needs alone",
      [g(administer), g(view, { feedId: MAIN }, true)],
      "Feeds_ViewFeed",
      undefined,
      true,
    ],
    [
      "a group deny beats a feed grant",
      [g(view, { feedId: A }), g(view, { feedGroup: "team" }, true)],
      "Feeds_ViewFeed",
      scope(A, "team"),
      false,
    ],
    [
      "a deny of another attribute does not deny",
      [g(view), g(["Feeds_DownloadPackage"], {}, true)],
      "Feeds_ViewFeed",
      scope(MAIN),
      true,
    ],
    ["a deny alone grants nothing", [g(view, {}, true)], "Feeds_AddPackage", scope(MAIN), false],
    ["a deny beats the super attribute", [g(administer), g(view, {}, true)], "Feeds_ViewFeed", scope(MAIN), false],
    [
      "the global super attribute implies any attribute",
      [g(["Admin_ConfigureProGet"])],
      "Infrastructure_Manage",
      undefined,
      true,
    ],
    [
      "the global super attribute implies unknown ones",
      [g(["Admin_ConfigureProGet"])],
      "Some_FutureAttribute",
      scope(MAIN),
      true,
    ],
    [
      "the super attribute on a feed implies nothing else",
      [g(["Admin_ConfigureProGet"], { feedId: MAIN })],
      "Feeds_ViewFeed",
      scope(MAIN),
      false,
    ],
    [
      "the super attribute on a feed group implies nothing else",
      [g(["Admin_ConfigureProGet"], { feedGroup: "t" })],
      "Feeds_AddPackage",
      scope(A, "t"),
      false,
    ],
    [
      "the super attribute on a feed still grants itself there",
      [g(["Admin_ConfigureProGet"], { feedId: MAIN })],
      "Admin_ConfigureProGet",
      scope(MAIN),
      true,
    ],
    [
      "a denied super attribute is not implied",
      [g(["Admin_ConfigureProGet"]), g(["Admin_ConfigureProGet"], {}, true)],
      "Admin_ConfigureProGet",
      undefined,
      false,
    ],
  ])("%s", (_name, grants, attribute, feed, expected) => {
    expect(grantsAllow(grants, attribute, feed)).toBe(expected);
  });
});
