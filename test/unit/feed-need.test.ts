import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { keyAllows } from "../../src/domain/access.js";
import { MANAGE_CONNECTORS, needOnFeed } from "../../src/domain/principal.js";
import { needOnRequestFeed } from "../../src/http/feed-access.js";

/** domain/principal.ts needOnFeed and http/feed-access.ts: the one shape of a need on a feed. */

const feedsKey = { type: "system-key", keyId: 1, apis: ["feeds"] } as const;
const mainKey = { type: "feed-key", keyId: 2, feedId: 1, feedGroup: undefined, permissions: ["view"] } as const;
const main = { id: 1, name: "main", group: undefined };

describe("needOnFeed", () => {
  it("names the attribute and the feed, passed by a System key with the feeds scope", () => {
    expect(needOnFeed("Feeds_ViewFeed", "main")).toEqual({ api: "feeds", attribute: "Feeds_ViewFeed", feed: "main" });
    expect(needOnFeed("Feeds_ViewFeed", main)).toEqual({ api: "feeds", attribute: "Feeds_ViewFeed", feed: main });
    expect(keyAllows(feedsKey, needOnFeed("Feeds_DeletePackage", "main"), main)).toBe(true);
    expect(keyAllows({ ...feedsKey, apis: ["metrics"] }, needOnFeed("Feeds_ViewFeed", "main"), main)).toBe(false);
  });

  it("without a feed is a global need: no feed member at all, and a Feed key never passes it", () => {
    const global = needOnFeed("Feeds_ViewFeed");
    expect(global).toEqual({ api: "feeds", attribute: "Feeds_ViewFeed" });
    expect("feed" in global).toBe(false);
    expect(keyAllows(mainKey, global, undefined)).toBe(false);
    expect(keyAllows(mainKey, needOnFeed("Feeds_ViewFeed", "main"), main)).toBe(true);
    expect(MANAGE_CONNECTORS).toEqual(needOnFeed("Admin_ManageFeed"));
  });
});

describe("needOnRequestFeed", () => {
  const request = (params: object) => ({ params }) as FastifyRequest;

  it("takes the feed from the request, each time it is asked", () => {
    const need = needOnRequestFeed("Feeds_AddPackage", (r) => (r.params as { feed: string }).feed);
    expect(need(request({ feed: "main" }))).toEqual({ api: "feeds", attribute: "Feeds_AddPackage", feed: "main" });
    expect(need(request({ feed: "other" }))).toEqual({ api: "feeds", attribute: "Feeds_AddPackage", feed: "other" });
  });

  it("asks for a global grant when the request names no feed", () => {
    const need = needOnRequestFeed("Admin_ManageFeed", () => undefined);
    expect(need(request({}))).toEqual({ api: "feeds", attribute: "Admin_ManageFeed" });
  });
});
