import { beforeAll, expect, it } from "vitest";
import { defaultSettings, type Feed, type FeedDraft } from "../../../src/areas/management/feed-settings.js";
import { createFeedRepository, type FeedRepository } from "../../../src/areas/management/repository.js";
import { createPostgresFeedRepository } from "../../../src/areas/management/repository-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { onOtherNode, whileHeld } from "../../helpers/postgres-races.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const LATER = "2026-11-29T11:00:00.000Z";

const draft = (name: string, fields: Partial<FeedDraft> = {}): FeedDraft => ({
  name,
  alternateNames: [],
  feedType: "universal",
  settings: defaultSettings(),
  ...fields,
});

const repositoryOn = (database: TestDatabase): FeedRepository =>
  database.kind === "sqlite" ? createFeedRepository(database.sqlite) : createPostgresFeedRepository(database.postgres);

describeOnBothDatabases("Feed repository", (database) => {
  let feeds: FeedRepository;
  let upstreamId: number;
  let mirrorId: number;
  let asserted: Feed;

  beforeAll(async () => {
    feeds = repositoryOn(database());
    const { exec } = database();
    const connector = async (name: string) =>
      (
        (await exec(
          `INSERT INTO connectors (name, name_key, url, feed_type, settings, created_at, modified_at)
           VALUES (?, ?, 'https://example.com/upack/x', 'universal', '{}', ?, ?) RETURNING id`,
          [name, name.toLowerCase(), CREATED, CREATED],
        )) as [{ id: number }]
      )[0].id;
    upstreamId = await connector("Upstream");
    mirrorId = await connector("mirror");
  });

  it("stores a feed and gives it back whole: names, group, settings, connectors in the order given", async () => {
    const settings = { ...defaultSettings(), description: "Main feed", variables: { a: "1" } };
    asserted = await feeds.insert(
      draft("Main", {
        alternateNames: ["main-old"],
        feedGroup: "team",
        settings: { ...settings, connectors: ["MIRROR", "upstream"] },
      }),
      "key-main",
      CREATED,
    );
    expect(asserted).toEqual({
      id: asserted.id,
      name: "Main",
      alternateNames: ["main-old"],
      feedType: "universal",
      feedGroup: "team",
      storageKey: "key-main",
      // Connectors are read back as the connectors' names, in the feed's order.
      settings: { ...settings, connectors: ["mirror", "Upstream"] },
      createdAt: CREATED,
      modifiedAt: CREATED,
    });
    const plain = await feeds.insert(draft("plain"), "key-plain", CREATED);
    expect(plain).toEqual({
      id: plain.id,
      name: "plain",
      alternateNames: [],
      feedType: "universal",
      storageKey: "key-plain",
      settings: defaultSettings(),
      createdAt: CREATED,
      modifiedAt: CREATED,
    });
    expect(plain.id).toBeGreaterThan(asserted.id);
  });

  it("finds a feed and its scope by its name or an alternate name, case-insensitively", async () => {
    expect(await feeds.findByName("main")).toEqual(asserted);
    expect(await feeds.findByName("MAIN-OLD")).toEqual(asserted);
    expect(await feeds.findScope("Main-Old")).toEqual({ id: asserted.id, name: "Main", group: "team" });
    const plain = await feeds.findScope("PLAIN");
    expect(plain).toEqual({ id: plain?.id, name: "plain", group: undefined });
    expect(await feeds.findByName("nothing")).toBeUndefined();
    expect(await feeds.findScope("nothing")).toBeUndefined();
  });

  it("lists feeds by name case-insensitively (ASCII letters folded to lower case, then code point order)", async () => {
    // '_' sorts before letters only when upper case is folded to lower; É and é are not folded.
    for (const name of ["beta", "Zed", "_under", "éclair", "Ébène", "Alpha"]) {
      await feeds.insert(draft(name), `key-${name}`, CREATED);
    }
    const listed = await feeds.list();
    expect(listed.map((feed) => feed.name)).toEqual([
      "_under",
      "Alpha",
      "beta",
      "Main",
      "plain",
      "Zed",
      "Ébène",
      "éclair",
    ]);
    expect(listed.find((feed) => feed.name === "Main")).toEqual(asserted);
  });

  it("keeps alternate names in the order given, also after an update that reorders them", async () => {
    // Not "alpha": a feed of the test above has that name.
    const given = ["zeta", "alpha-old", "mid"];
    const feed = await feeds.insert(draft("ordered", { alternateNames: given }), "key-ordered", CREATED);
    // Another feed's names in between: each feed's names are read in their own order.
    const other = await feeds.insert(draft("ordered-2", { alternateNames: ["b2", "a2"] }), "key-o2", CREATED);
    /** The alternate names as each read gives them: findByName's and list's. */
    const readBack = async (id: number, name: string) => [
      (await feeds.findByName(name))?.alternateNames,
      (await feeds.list()).find((f) => f.id === id)?.alternateNames,
    ];
    expect(feed.alternateNames).toEqual(given);
    expect(await readBack(feed.id, "ordered")).toEqual([given, given]);

    const reordered = ["mid", "zeta", "alpha-old"];
    const updated = await feeds.update(feed.id, (current) => ({ ...current, alternateNames: reordered }), LATER);
    expect(updated.alternateNames).toEqual(reordered);
    expect(await readBack(feed.id, "ALPHA-OLD")).toEqual([reordered, reordered]);
    expect(await readBack(other.id, "ordered-2")).toEqual([
      ["b2", "a2"],
      ["b2", "a2"],
    ]);
    expect(await feeds.deleteByName("ordered")).toBe(true);
    expect(await feeds.deleteByName("ordered-2")).toBe(true);
  });

  it("refuses a name another feed has, primary or alternate, case-insensitively, and writes nothing", async () => {
    const before = await feeds.list();
    await expect(feeds.insert(draft("MAIN"), "key-x1", CREATED)).rejects.toMatchObject({
      kind: "conflict",
      code: "FEED_NAME_TAKEN",
      message: "a feed named 'Main' already exists",
    });
    await expect(
      feeds.insert(draft("fresh", { alternateNames: ["Main-Old"] }), "key-x2", CREATED),
    ).rejects.toMatchObject({
      kind: "conflict",
      code: "FEED_NAME_TAKEN",
      message: "the name 'Main-Old' is already an alternate name of feed 'Main'",
    });
    // A name given twice collides with itself: the key's backstop.
    await expect(feeds.insert(draft("twice", { alternateNames: ["TWICE"] }), "key-x3", CREATED)).rejects.toMatchObject({
      kind: "conflict",
      code: "FEED_NAME_TAKEN",
      message: "a feed with one of these names already exists",
    });
    // So is a storage key in use (never in practice: they are random).
    await expect(feeds.insert(draft("fresh"), "key-main", CREATED)).rejects.toMatchObject({
      kind: "conflict",
      code: "FEED_NAME_TAKEN",
    });
    expect(await feeds.list()).toEqual(before);
    expect(await feeds.findScope("fresh")).toBeUndefined();
  });

  it("refuses a connector no connector is named, with unprocessable CONNECTOR_NOT_FOUND, and writes nothing", async () => {
    const settings = { ...defaultSettings(), connectors: ["upstream", "ghost"] };
    await expect(feeds.insert(draft("haunted", { settings }), "key-h", CREATED)).rejects.toMatchObject({
      kind: "unprocessable",
      code: "CONNECTOR_NOT_FOUND",
      message: "connector 'ghost' does not exist",
    });
    expect(await feeds.findScope("haunted")).toBeUndefined();
    await expect(feeds.update(asserted.id, (current) => ({ ...current, settings }), LATER)).rejects.toMatchObject({
      kind: "unprocessable",
      code: "CONNECTOR_NOT_FOUND",
    });
    expect(await feeds.findByName("main")).toEqual(asserted);
  });

  it("updates a feed from its current state in one go: rename, alternates, group, settings, connectors", async () => {
    let seen: Feed | undefined;
    const updated = await feeds.update(
      asserted.id,
      (current) => {
        seen = current;
        const { feedGroup: _group, ...rest } = current;
        return {
          ...rest,
          name: "Primary",
          alternateNames: ["Main"],
          settings: { ...current.settings, active: false, connectors: ["upstream"] },
        };
      },
      LATER,
    );
    expect(seen).toEqual(asserted);
    const { feedGroup: _group, ...ungrouped } = asserted;
    asserted = {
      ...ungrouped,
      name: "Primary",
      alternateNames: ["Main"],
      settings: { ...asserted.settings, active: false, connectors: ["Upstream"] },
      modifiedAt: LATER,
    };
    expect(updated).toEqual(asserted);
    expect(await feeds.findByName("main")).toEqual(asserted);
    // The dropped alternate name is free again.
    expect(await feeds.findScope("main-old")).toBeUndefined();
    expect(await feeds.findScope("primary")).toEqual({ id: asserted.id, name: "Primary", group: undefined });
  });

  it("refuses to update a feed that does not exist, without calling the change", async () => {
    let called = false;
    await expect(
      feeds.update(
        999_999,
        (current) => {
          called = true;
          return current;
        },
        LATER,
      ),
    ).rejects.toMatchObject({ kind: "not_found", code: "FEED_NOT_FOUND" });
    expect(called).toBe(false);
  });

  it("refuses an update to another feed's name, and one whose change throws, writing nothing", async () => {
    await expect(
      feeds.update(asserted.id, (current) => ({ ...current, alternateNames: ["Main", "Beta"] }), LATER),
    ).rejects.toMatchObject({
      kind: "conflict",
      code: "FEED_NAME_TAKEN",
      message: "a feed named 'beta' already exists",
    });
    const refusal = new Error("no, thanks");
    await expect(
      feeds.update(
        asserted.id,
        () => {
          throw refusal;
        },
        LATER,
      ),
    ).rejects.toBe(refusal);
    expect(await feeds.findByName("primary")).toEqual(asserted);
    // Its own names, in another spelling, are no conflict.
    const respelled = await feeds.update(asserted.id, (current) => ({ ...current, name: "PRIMARY" }), LATER);
    expect(respelled.name).toBe("PRIMARY");
    asserted = await feeds.update(asserted.id, (current) => ({ ...current, name: "Primary" }), LATER);
  });

  it("shows a renamed connector under its new name, and drops a deleted one", async () => {
    const { exec } = database();
    await exec("UPDATE connectors SET name = 'Upstream2', name_key = 'upstream2' WHERE id = ?", [upstreamId]);
    expect((await feeds.findByName("primary"))?.settings.connectors).toEqual(["Upstream2"]);
    await exec("DELETE FROM connectors WHERE id = ?", [upstreamId]);
    expect((await feeds.findByName("primary"))?.settings.connectors).toEqual([]);
    expect(await exec("SELECT * FROM feed_connectors WHERE connector_id = ?", [upstreamId])).toEqual([]);
  });

  it("deletes a feed by any of its names once, with its names, keys and connector bindings", async () => {
    const { exec } = database();
    const doomed = await feeds.insert(
      draft("doomed", { alternateNames: ["doomed-alias"], settings: { ...defaultSettings(), connectors: ["mirror"] } }),
      "key-doomed",
      CREATED,
    );
    await exec(
      `INSERT INTO api_keys (key_hash, key_type, package_permissions, feed_id, logging, created_at)
       VALUES ('${"f".repeat(64)}', 'Feed', '["view"]', ?, 'None', ?)`,
      [doomed.id, CREATED],
    );
    expect(await feeds.deleteByName("DOOMED-ALIAS")).toBe(true);
    expect(await feeds.deleteByName("doomed")).toBe(false);
    expect(await feeds.findByName("doomed")).toBeUndefined();
    expect(await feeds.findScope("doomed-alias")).toBeUndefined();
    expect(await exec("SELECT * FROM feed_names WHERE feed_id = ?", [doomed.id])).toEqual([]);
    expect(await exec("SELECT * FROM feed_connectors WHERE feed_id = ?", [doomed.id])).toEqual([]);
    expect(await exec("SELECT * FROM api_keys WHERE feed_id = ?", [doomed.id])).toEqual([]);
    expect(await exec("SELECT * FROM feed_connectors WHERE connector_id = ?", [mirrorId])).toEqual([]);
    // Its names are free again.
    const reborn = await feeds.insert(draft("doomed-alias"), "key-reborn", CREATED);
    expect(await feeds.findScope("DOOMED-alias")).toEqual({ id: reborn.id, name: "doomed-alias", group: undefined });
    expect(await feeds.deleteByName("nothing")).toBe(false);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    const feed = await feeds.insert(draft("counted"), "key-counted", CREATED);
    await feeds.update(feed.id, (current) => ({ ...current, alternateNames: ["counted-2"] }), LATER);
    await feeds.deleteByName("counted");
    await feeds.findByName("primary");
    await feeds.list();
    expect(db.commits()).toBe(before + 3);
  });

  it("two nodes creating feeds of one name at once: exactly one gets it, the other a conflict (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    await onOtherNode(db, createPostgresFeedRepository, async (other) => {
      for (let round = 0; round < 5; round++) {
        const name = `race-${round}`;
        const results = await Promise.allSettled([
          feeds.insert(draft(name, { alternateNames: [`${name}-a`, `${name}-b`] }), `key-${name}-1`, CREATED),
          other.insert(draft(name.toUpperCase(), { alternateNames: [`${name}-b`] }), `key-${name}-2`, CREATED),
        ]);
        expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
        const [refused] = results.filter((r) => r.status === "rejected");
        expect(refused?.reason).toMatchObject({ kind: "conflict", code: "FEED_NAME_TAKEN" });
        expect((await feeds.list()).filter((feed) => feed.name.toLowerCase() === name)).toHaveLength(1);
      }
    });
  });

  it("a name taken by a writer that commits after the check: the check's conflict, no driver error (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const settled = await whileHeld(db.postgres.pool, {
      hold: async (holder) => {
        const [held] = (
          await holder.query<{ id: number }>(
            `INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at)
             VALUES ('Held', 'universal', 'key-held', '{}', $1, $1) RETURNING id`,
            [CREATED],
          )
        ).rows;
        await holder.query(
          "INSERT INTO feed_names (name_key, feed_id, is_primary, name) VALUES ('held', $1, 1, 'Held')",
          [held?.id],
        );
      },
      race: () =>
        Promise.allSettled([feeds.insert(draft("fresh-2", { alternateNames: ["HELD"] }), "key-fresh-2", CREATED)]),
      waiters: 1,
    });
    expect(settled).toMatchObject([
      {
        status: "rejected",
        reason: { kind: "conflict", code: "FEED_NAME_TAKEN", message: "a feed named 'Held' already exists" },
      },
    ]);
    expect(await feeds.findScope("fresh-2")).toBeUndefined();
  });

  it("two nodes updating one feed at once: neither loses the other's change (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    await onOtherNode(db, createPostgresFeedRepository, async (other) => {
      const feed = await feeds.insert(draft("shared"), "key-shared", CREATED);
      // Both updates start while the row is held, so that both would read the same state without their lock.
      const settled = await whileHeld(db.postgres.pool, {
        hold: (holder) => holder.query("SELECT 1 FROM feeds WHERE id = $1 FOR UPDATE", [feed.id]),
        race: () =>
          Promise.allSettled([
            feeds.update(
              feed.id,
              (current) => ({ ...current, settings: { ...current.settings, description: "described" } }),
              LATER,
            ),
            other.update(
              feed.id,
              (current) => ({ ...current, alternateNames: [...current.alternateNames, "shared-alias"] }),
              LATER,
            ),
          ]),
        waiters: 2,
      });
      expect(settled.map((result) => result.status)).toEqual(["fulfilled", "fulfilled"]);
      const stored = await feeds.findByName("shared-alias");
      expect(stored?.settings.description).toBe("described");
      expect(stored?.alternateNames).toEqual(["shared-alias"]);
    });
  });

  it("two nodes renaming two feeds to one name at once: one conflict, no driver error (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    await onOtherNode(db, createPostgresFeedRepository, async (other) => {
      const a = await feeds.insert(draft("rename-a"), "key-rename-a", CREATED);
      const b = await feeds.insert(draft("rename-b"), "key-rename-b", CREATED);
      const results = await Promise.allSettled([
        feeds.update(a.id, (current) => ({ ...current, name: "renamed" }), LATER),
        other.update(b.id, (current) => ({ ...current, name: "Renamed" }), LATER),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      expect(results.find((r) => r.status === "rejected")?.reason).toMatchObject({
        kind: "conflict",
        code: "FEED_NAME_TAKEN",
      });
      expect((await feeds.list()).filter((feed) => feed.name.toLowerCase() === "renamed")).toHaveLength(1);
    });
  });

  it("a connector deleted while a feed is bound to it: CONNECTOR_NOT_FOUND, no driver error (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const [{ id }] = (await db.exec(
      `INSERT INTO connectors (name, name_key, url, feed_type, settings, created_at, modified_at)
       VALUES ('fleeting', 'fleeting', 'https://example.com/upack/f', 'universal', '{}', ?, ?) RETURNING id`,
      [CREATED, CREATED],
    )) as [{ id: number }];
    const settled = await whileHeld(db.postgres.pool, {
      hold: (holder) => holder.query("DELETE FROM connectors WHERE id = $1", [id]),
      race: () =>
        Promise.allSettled([
          feeds.insert(
            draft("bound", { settings: { ...defaultSettings(), connectors: ["fleeting"] } }),
            "key-bound",
            CREATED,
          ),
        ]),
      waiters: 1,
    });
    expect(settled).toMatchObject([
      { status: "rejected", reason: { kind: "unprocessable", code: "CONNECTOR_NOT_FOUND" } },
    ]);
    expect(await feeds.findScope("bound")).toBeUndefined();
  });

  it("two nodes deleting one feed at once: one deletes it (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    await onOtherNode(db, createPostgresFeedRepository, async (other) => {
      await feeds.insert(draft("twice-deleted"), "key-twice-deleted", CREATED);
      const results = await Promise.all([feeds.deleteByName("twice-deleted"), other.deleteByName("twice-deleted")]);
      expect(results.sort()).toEqual([false, true]);
    });
  });
});
