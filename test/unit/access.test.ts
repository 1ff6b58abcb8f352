import { describe, expect, it } from "vitest";
import { type Grant, grantsAllow, keyAllows } from "../../src/domain/access.js";
import { ATTRIBUTES } from "../../src/domain/attributes.js";
import type { AccessNeed, FeedKeyPermission, FeedScope, Principal, SystemApi } from "../../src/domain/principal.js";

/** The access rules of domain/access.ts, table by table. */

type KeyPrincipal = Extract<Principal, { type: "system-key" | "feed-key" }>;

const systemKey = (...apis: SystemApi[]): KeyPrincipal => ({ type: "system-key", keyId: 1, apis });
const feedKey = (target: { feed?: string; feedGroup?: string }, ...permissions: FeedKeyPermission[]): KeyPrincipal => ({
  type: "feed-key",
  keyId: 2,
  feed: target.feed,
  feedGroup: target.feedGroup,
  permissions,
});
const scope = (name: string, group?: string): FeedScope => ({ name, group });

describe("keyAllows: System keys", () => {
  const admin: AccessNeed = { api: "full-control", attribute: "Admin_ConfigureProGet" };
  const feedsNeed: AccessNeed = { api: "feeds", attribute: "Feeds_ViewFeed", feed: "main" };
  const onlyFullControl: AccessNeed = { attribute: "Admin_ConfigureProGet" };

  it.each<[string, KeyPrincipal, AccessNeed, FeedScope | undefined, boolean]>([
    ["full-control passes an admin need", systemKey("full-control"), admin, undefined, true],
    ["full-control passes a feeds need", systemKey("full-control"), feedsNeed, scope("main"), true],
    ["full-control passes a need with no api", systemKey("full-control"), onlyFullControl, undefined, true],
    ["the need's own api passes", systemKey("feeds"), feedsNeed, scope("main"), true],
    ["one of several apis passes", systemKey("metrics", "feeds"), feedsNeed, scope("main"), true],
    ["another api does not pass", systemKey("metrics"), feedsNeed, scope("main"), false],
    ["feeds does not pass an admin need", systemKey("feeds"), admin, undefined, false],
    ["no api never passes a need with no api", systemKey("feeds", "metrics"), onlyFullControl, undefined, false],
    ["a key with no apis passes nothing", systemKey(), feedsNeed, scope("main"), false],
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
    ["view on its feed", feedKey({ feed: "Main" }, "view"), need("Feeds_ViewFeed", "main"), scope("main"), true],
    [
      "feed names compare case-insensitively",
      feedKey({ feed: "main" }, "view"),
      need("Feeds_DownloadPackage"),
      scope("MAIN"),
      true,
    ],
    ["view on another feed", feedKey({ feed: "main" }, "view"), need("Feeds_ViewFeed"), scope("other"), false],
    [
      "any need with no feed",
      feedKey({ feed: "main" }, "view", "add", "promote", "delete"),
      need("Feeds_ViewFeed"),
      undefined,
      false,
    ],
    [
      "an admin need",
      feedKey({ feed: "main" }, "view", "add", "promote", "delete"),
      need("Admin_ConfigureProGet"),
      scope("main"),
      false,
    ],
    [
      "managing its own feed",
      feedKey({ feed: "main" }, "view", "add", "promote", "delete"),
      need("Admin_ManageFeed"),
      scope("main"),
      false,
    ],
    ["view does not add", feedKey({ feed: "main" }, "view"), need("Feeds_AddPackage"), scope("main"), false],
    ["add adds and pulls", feedKey({ feed: "main" }, "add"), need("Feeds_PullPackage"), scope("main"), true],
    ["add does not view", feedKey({ feed: "main" }, "add"), need("Feeds_ViewFeed"), scope("main"), false],
    [
      "promote accepts promotions",
      feedKey({ feed: "main" }, "promote"),
      need("Feeds_AcceptPackagePromotions"),
      scope("main"),
      true,
    ],
    ["delete overwrites", feedKey({ feed: "main" }, "delete"), need("Feeds_OverwritePackage"), scope("main"), true],
    ["delete deletes", feedKey({ feed: "main" }, "delete"), need("Feeds_DeletePackage"), scope("main"), true],
    ["delete unlists", feedKey({ feed: "main" }, "delete"), need("Feeds_UnlistPackage"), scope("main"), true],
    ["delete does not add", feedKey({ feed: "main" }, "delete"), need("Feeds_AddPackage"), scope("main"), false],
    [
      "a group key on a feed of its group",
      feedKey({ feedGroup: "Team" }, "view"),
      need("Feeds_ViewFeed"),
      scope("a", "team"),
      true,
    ],
    [
      "a group key on a feed of another group",
      feedKey({ feedGroup: "team" }, "view"),
      need("Feeds_ViewFeed"),
      scope("a", "ops"),
      false,
    ],
    [
      "a group key on a feed of no group",
      feedKey({ feedGroup: "team" }, "view"),
      need("Feeds_ViewFeed"),
      scope("a"),
      false,
    ],
    [
      "a feed key whose feed is in a group",
      feedKey({ feed: "a" }, "view"),
      need("Feeds_ViewFeed"),
      scope("a", "team"),
      true,
    ],
    ["a key with no permissions", feedKey({ feed: "main" }), need("Feeds_ViewFeed"), scope("main"), false],
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
        keyAllows(feedKey({ feed: "main" }, word), { attribute, feed: "main" }, scope("main")),
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
    where: { feedName?: string; feedGroup?: string } = {},
    deny = false,
  ): Grant => ({
    attributes,
    ...where,
    deny,
  });

  it.each<[string, Grant[], string, FeedScope | undefined, boolean]>([
    ["nothing granted", [], "Feeds_ViewFeed", scope("main"), false],
    ["a global grant, on a feed", [g(view)], "Feeds_ViewFeed", scope("main"), true],
    ["a global grant, on no feed", [g(view)], "Feeds_ViewFeed", undefined, true],
    ["a grant without the attribute", [g(view)], "Feeds_AddPackage", scope("main"), false],
    ["a feed grant on its feed", [g(view, { feedName: "main" })], "Feeds_ViewFeed", scope("Main"), true],
    ["a feed grant on another feed", [g(view, { feedName: "main" })], "Feeds_ViewFeed", scope("other"), false],
    ["a feed grant on a need with no feed", [g(view, { feedName: "main" })], "Feeds_ViewFeed", undefined, false],
    [
      "a feed-group grant on a feed of the group",
      [g(view, { feedGroup: "team" })],
      "Feeds_ViewFeed",
      scope("a", "Team"),
      true,
    ],
    [
      "a feed-group grant on a feed of another group",
      [g(view, { feedGroup: "team" })],
      "Feeds_ViewFeed",
      scope("a", "ops"),
      false,
    ],
    ["a feed-group grant on a feed of no group", [g(view, { feedGroup: "team" })], "Feeds_ViewFeed", scope("a"), false],
    [
      "a feed-group grant named like the feed",
      [g(view, { feedGroup: "main" })],
      "Feeds_ViewFeed",
      scope("main"),
      false,
    ],
    ["a global deny beats a global grant", [g(view), g(view, {}, true)], "Feeds_ViewFeed", scope("main"), false],
    ["a deny listed first still wins", [g(view, {}, true), g(view)], "Feeds_ViewFeed", scope("main"), false],
    [
      "a feed deny beats a global grant on that feed",
      [g(view), g(view, { feedName: "main" }, true)],
      "Feeds_ViewFeed",
      scope("main"),
      false,
    ],
    [
      "a feed deny leaves other feeds alone",
      [g(view), g(view, { feedName: "main" }, true)],
      "Feeds_ViewFeed",
      scope("other"),
      true,
    ],
    [
      "a feed deny leaves global needs alone",
      [g(administer), g(view, { feedName: "main" }, true)],
      "Feeds_ViewFeed",
      undefined,
      true,
    ],
    [
      "a group deny beats a feed grant",
      [g(view, { feedName: "a" }), g(view, { feedGroup: "team" }, true)],
      "Feeds_ViewFeed",
      scope("a", "team"),
      false,
    ],
    [
      "a deny of another attribute does not deny",
      [g(view), g(["Feeds_DownloadPackage"], {}, true)],
      "Feeds_ViewFeed",
      scope("main"),
      true,
    ],
    ["a deny alone grants nothing", [g(view, {}, true)], "Feeds_AddPackage", scope("main"), false],
    ["a deny beats the super attribute", [g(administer), g(view, {}, true)], "Feeds_ViewFeed", scope("main"), false],
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
      scope("main"),
      true,
    ],
    [
      "the super attribute on a feed implies nothing else",
      [g(["Admin_ConfigureProGet"], { feedName: "main" })],
      "Feeds_ViewFeed",
      scope("main"),
      false,
    ],
    [
      "the super attribute on a feed group implies nothing else",
      [g(["Admin_ConfigureProGet"], { feedGroup: "t" })],
      "Feeds_AddPackage",
      scope("a", "t"),
      false,
    ],
    [
      "the super attribute on a feed still grants itself there",
      [g(["Admin_ConfigureProGet"], { feedName: "main" })],
      "Admin_ConfigureProGet",
      scope("main"),
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
