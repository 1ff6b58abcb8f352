import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { type CachedAnswer, createMetadataCacheRepository } from "../../../src/areas/connectors/metadata-cache.js";
import type { MetadataCacheRepository } from "../../../src/areas/connectors/metadata-cache.js";
import { createPostgresMetadataCacheRepository } from "../../../src/areas/connectors/metadata-cache-postgres.js";
import { CONNECTOR_DEFAULTS, type Connector, type ConnectorDraft } from "../../../src/areas/connectors/model.js";
import { type ConnectorRepository, createConnectorRepository } from "../../../src/areas/connectors/repository.js";
import { createPostgresConnectorRepository } from "../../../src/areas/connectors/repository-postgres.js";
import { isForeignKeyViolation } from "../../../src/storage/sqlite-errors.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { onOtherNode, otherNodesForBlock, whileHeld } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const LATER = "2026-11-29T11:00:00.000Z";
const UNKNOWN = { state: "unknown", errorMessage: undefined, lastChecked: undefined } as const;

const draft = (name: string, fields: Partial<ConnectorDraft> = {}): ConnectorDraft => ({
  name,
  url: `https://example.com/upack/${name.toLowerCase()}`,
  feedType: "universal",
  timeoutSeconds: CONNECTOR_DEFAULTS.timeoutSeconds,
  metadataCacheEnabled: CONNECTOR_DEFAULTS.metadataCacheEnabled,
  metadataCacheMinutes: CONNECTOR_DEFAULTS.metadataCacheMinutes,
  metadataCacheCount: CONNECTOR_DEFAULTS.metadataCacheCount,
  username: undefined,
  password: undefined,
  filters: [],
  mergeWithLocalPackages: CONNECTOR_DEFAULTS.mergeWithLocalPackages,
  ...fields,
});

const answer = (status: number, fetchedAt: string, body = status === 200 ? '{"ok":true}' : ""): CachedAnswer => ({
  status,
  body,
  fetchedAt,
});

const connectorsOn = (database: TestDatabase): ConnectorRepository =>
  database.kind === "sqlite"
    ? createConnectorRepository(database.sqlite)
    : createPostgresConnectorRepository(database.postgres);

const cacheOn = (database: TestDatabase): MetadataCacheRepository =>
  database.kind === "sqlite"
    ? createMetadataCacheRepository(database.sqlite)
    : createPostgresMetadataCacheRepository(database.postgres);

type Postgres = Extract<TestDatabase, { kind: "postgres" }>;

describeOnBothDatabases("Connector repositories", (database) => {
  describe("connectors", () => {
    let connectors: ConnectorRepository;
    let cache: MetadataCacheRepository;
    let upstream: Connector;

    beforeAll(() => {
      connectors = connectorsOn(database());
      cache = cacheOn(database());
    });

    it("stores a connector and gives it back whole, health unknown, by id and by name case-insensitively", async () => {
      upstream = await connectors.insert(
        draft("Upstream", {
          username: "bob",
          password: "v1:sealed",
          filters: ["Acme.*", "!Acme.Bad*"],
          timeoutSeconds: 5,
          metadataCacheCount: 3,
          mergeWithLocalPackages: true,
        }),
        CREATED,
      );
      expect(upstream).toEqual({
        id: upstream.id,
        name: "Upstream",
        url: "https://example.com/upack/upstream",
        feedType: "universal",
        timeoutSeconds: 5,
        metadataCacheEnabled: true,
        metadataCacheMinutes: 30,
        metadataCacheCount: 3,
        username: "bob",
        password: "v1:sealed",
        filters: ["Acme.*", "!Acme.Bad*"],
        mergeWithLocalPackages: true,
        health: UNKNOWN,
        createdAt: CREATED,
        modifiedAt: CREATED,
      });
      expect(await connectors.findById(upstream.id)).toEqual(upstream);
      expect(await connectors.findByName("UPSTREAM")).toEqual(upstream);
      expect(await connectors.findById(999_999)).toBeUndefined();
      expect(await connectors.findByName("nothing")).toBeUndefined();
    });

    it("reads settings an older Wharf did not write as their defaults", async () => {
      const { exec } = database();
      await exec(
        `INSERT INTO connectors (name, name_key, url, feed_type, settings, created_at, modified_at)
         VALUES ('old', 'old', 'https://example.com/upack/old', 'universal', '{"timeout":7}', ?, ?)`,
        [CREATED, CREATED],
      );
      const old = await connectors.findByName("old");
      expect(old).toEqual({
        ...draft("old", { timeoutSeconds: 7 }),
        id: old?.id,
        health: UNKNOWN,
        createdAt: CREATED,
        modifiedAt: CREATED,
      });
      expect(await connectors.deleteById(old?.id ?? 0)).toBe(true);
    });

    it("lists connectors by name case-insensitively (ASCII letters folded to lower case, then code point order)", async () => {
      for (const name of ["beta", "Zed", "_under", "éclair", "Ébène", "Alpha"])
        await connectors.insert(draft(name), CREATED);
      const listed = await connectors.list();
      expect(listed.map((c) => c.name)).toEqual(["_under", "Alpha", "beta", "Upstream", "Zed", "Ébène", "éclair"]);
      expect(listed[3]).toEqual(upstream);
    });

    it("refuses a name taken, case-insensitively, with the owner's spelling, and writes nothing", async () => {
      await expect(connectors.insert(draft("UPSTREAM"), CREATED)).rejects.toMatchObject({
        kind: "conflict",
        code: "CONNECTOR_NAME_TAKEN",
        message: "a connector named 'Upstream' already exists",
      });
      expect(await connectors.list()).toHaveLength(7);
    });

    it("updates from the current state; upstream unchanged: health and cached answers stay", async () => {
      const { exec } = database();
      await exec("UPDATE connectors SET health_state = 'healthy', health_checked_at = ? WHERE id = ?", [
        CREATED,
        upstream.id,
      ]);
      await cache.store(upstream.id, "packages", answer(200, CREATED), 10);
      let seen: Connector | undefined;
      const updated = await connectors.update(
        upstream.id,
        (current) => {
          seen = current;
          return { ...current, name: "upstream", timeoutSeconds: 9, filters: [] };
        },
        LATER,
      );
      const healthy = { state: "healthy", errorMessage: undefined, lastChecked: CREATED } as const;
      expect(seen).toEqual({ ...upstream, health: healthy });
      upstream = { ...upstream, name: "upstream", timeoutSeconds: 9, filters: [], health: healthy, modifiedAt: LATER };
      expect(updated).toEqual(upstream);
      expect(await connectors.findByName("UPSTREAM")).toEqual(upstream);
      expect(await cache.find(upstream.id, "packages")).toEqual(answer(200, CREATED));
    });

    it.each([
      ["url", { url: "https://example.com/upack/elsewhere" }],
      ["feed type", { feedType: "nuget" }],
      ["username", { username: "alice" }],
      ["password", { password: "v1:other" }],
    ])("updates; the upstream's %s changed: health back to unknown, cached answers dropped", async (_, change) => {
      const { exec } = database();
      await exec(
        "UPDATE connectors SET health_state = 'error', health_error = 'down', health_checked_at = ? WHERE id = ?",
        [CREATED, upstream.id],
      );
      await cache.store(upstream.id, "packages", answer(200, CREATED), 10);
      const updated = await connectors.update(upstream.id, (current) => ({ ...current, ...change }), LATER);
      upstream = { ...upstream, ...change, health: UNKNOWN };
      expect(updated).toEqual(upstream);
      expect(await cache.find(upstream.id, "packages")).toBeUndefined();
    });

    it("refuses to update an unknown connector, to another's name, or when the change throws; writes nothing", async () => {
      let called = false;
      await expect(
        connectors.update(
          999_999,
          (current) => {
            called = true;
            return current;
          },
          LATER,
        ),
      ).rejects.toMatchObject({ kind: "not_found", code: "CONNECTOR_NOT_FOUND" });
      expect(called).toBe(false);
      await expect(
        connectors.update(upstream.id, (current) => ({ ...current, name: "BETA" }), LATER),
      ).rejects.toMatchObject({
        kind: "conflict",
        code: "CONNECTOR_NAME_TAKEN",
        message: "a connector named 'beta' already exists",
      });
      const refusal = new Error("no, thanks");
      await expect(
        connectors.update(
          upstream.id,
          () => {
            throw refusal;
          },
          LATER,
        ),
      ).rejects.toBe(refusal);
      expect(await connectors.findById(upstream.id)).toEqual(upstream);
    });

    it("records a check's health only while the connector has the upstream it checked", async () => {
      const healthy = { state: "healthy", errorMessage: undefined, lastChecked: LATER } as const;
      expect(await connectors.recordHealth(upstream, healthy)).toEqual({ ...upstream, health: healthy });
      const failed = { state: "error", errorMessage: "502 Bad Gateway", lastChecked: LATER } as const;
      for (const stale of [
        { url: "https://example.com/upack/before" },
        { feedType: "universal-old" },
        { username: undefined },
        { username: "someone-else" },
        { password: undefined },
        { password: "v1:before" },
      ]) {
        expect(await connectors.recordHealth({ ...upstream, ...stale }, failed)).toEqual({
          ...upstream,
          health: healthy,
        });
      }
      // No username and no password on either side: the same upstream (NULL IS NULL).
      const anonymous = (await connectors.findByName("beta")) as Connector;
      expect(await connectors.recordHealth(anonymous, failed)).toEqual({ ...anonymous, health: failed });
      expect(await connectors.recordHealth({ ...anonymous, id: 999_999 }, failed)).toBeUndefined();
      upstream = { ...upstream, health: healthy };
    });

    it("reseals the passwords the callback gives a new text for, in id order, and counts them", async () => {
      const { exec } = database();
      const zed = (await connectors.findByName("zed")) as Connector;
      const alpha = (await connectors.findByName("alpha")) as Connector;
      await exec("UPDATE connectors SET password = 'plain' WHERE id = ?", [zed.id]);
      await exec("UPDATE connectors SET password = 'v1:unreadable' WHERE id = ?", [alpha.id]);
      const seen: [string, string][] = [];
      const count = await connectors.resealPasswords((name, stored) => {
        seen.push([name, stored]);
        if (stored === "plain") return "v1:sealed-plain";
        if (stored === "v1:unreadable") return undefined;
        return stored;
      });
      expect(count).toBe(1);
      expect(seen).toEqual(
        [
          [upstream.id, upstream.name, upstream.password],
          [zed.id, "Zed", "plain"],
          [alpha.id, "Alpha", "v1:unreadable"],
        ]
          .sort((a, b) => (a[0] as number) - (b[0] as number))
          .map(([, name, stored]) => [name, stored]),
      );
      expect((await connectors.findById(zed.id))?.password).toBe("v1:sealed-plain");
      expect((await connectors.findById(alpha.id))?.password).toBe("v1:unreadable");
      expect(await connectors.findById(upstream.id)).toEqual(upstream);
      expect(await connectors.resealPasswords(() => undefined)).toBe(0);
    });

    it("deletes a connector once, with its cached answers and its place in feeds", async () => {
      const { exec } = database();
      const doomed = await connectors.insert(draft("doomed"), CREATED);
      const feedId = await insertFeed(exec, "f", CREATED);
      await exec("INSERT INTO feed_connectors (feed_id, position, connector_id) VALUES (?, 0, ?)", [feedId, doomed.id]);
      await cache.store(doomed.id, "packages", answer(200, CREATED), 10);
      expect(await connectors.deleteById(doomed.id)).toBe(true);
      expect(await connectors.deleteById(doomed.id)).toBe(false);
      expect(await connectors.findById(doomed.id)).toBeUndefined();
      expect(await cache.find(doomed.id, "packages")).toBeUndefined();
      expect(await exec("SELECT * FROM feed_connectors WHERE connector_id = ?", [doomed.id])).toEqual([]);
      // Its name is free again.
      expect((await connectors.insert(draft("DOOMED"), CREATED)).name).toBe("DOOMED");
    });

    it("tells the node's caches of each write at once (PostgreSQL)", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const before = db.commits();
      const counted = await connectors.insert(draft("counted"), CREATED);
      await connectors.update(counted.id, (current) => ({ ...current, timeoutSeconds: 1 }), LATER);
      await connectors.recordHealth(counted, UNKNOWN);
      await connectors.resealPasswords(() => undefined);
      await connectors.deleteById(counted.id);
      await connectors.list();
      await connectors.findById(counted.id);
      expect(db.commits()).toBe(before + 5);
    });
  });

  describe("connectors on two nodes (PostgreSQL)", () => {
    const otherNode = otherNodesForBlock(database);
    let connectors: ConnectorRepository;
    let other: ConnectorRepository;
    const pool = () => (database() as Postgres).postgres.pool;

    beforeAll(() => {
      if (database().kind !== "postgres") return;
      connectors = connectorsOn(database());
      other = createPostgresConnectorRepository(otherNode());
    });

    it("two nodes creating connectors of one name at once: exactly one gets it, the other a conflict", async () => {
      if (database().kind !== "postgres") return;
      for (let round = 0; round < 5; round++) {
        const name = `race-${round}`;
        const results = await Promise.allSettled([
          connectors.insert(draft(name), CREATED),
          other.insert(draft(name.toUpperCase()), CREATED),
        ]);
        expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
        expect(results.find((r) => r.status === "rejected")?.reason).toMatchObject({
          kind: "conflict",
          code: "CONNECTOR_NAME_TAKEN",
        });
      }
    });

    it("a name taken by a writer that commits after the check: the check's conflict, no driver error", async () => {
      if (database().kind !== "postgres") return;
      const renamed = await connectors.insert(draft("to-rename"), CREATED);
      const settled = await whileHeld(pool(), {
        hold: (holder) =>
          holder.query(
            `INSERT INTO connectors (name, name_key, url, feed_type, settings, created_at, modified_at)
             VALUES ('Held', 'held', 'https://example.com/upack/held', 'universal', '{}', $1, $1)`,
            [CREATED],
          ),
        race: () =>
          Promise.allSettled([
            connectors.insert(draft("HELD"), CREATED),
            other.update(renamed.id, (current) => ({ ...current, name: "held" }), LATER),
          ]),
        waiters: 2,
      });
      const refusal = {
        kind: "conflict",
        code: "CONNECTOR_NAME_TAKEN",
        message: "a connector named 'Held' already exists",
      };
      expect(settled).toMatchObject([
        { status: "rejected", reason: refusal },
        { status: "rejected", reason: refusal },
      ]);
      expect((await connectors.findById(renamed.id))?.name).toBe("to-rename");
    });

    it("two nodes updating one connector at once: neither loses the other's change", async () => {
      if (database().kind !== "postgres") return;
      const shared = await connectors.insert(draft("shared"), CREATED);
      const settled = await whileHeld(pool(), {
        hold: (holder) => holder.query("SELECT 1 FROM connectors WHERE id = $1 FOR UPDATE", [shared.id]),
        race: () =>
          Promise.allSettled([
            connectors.update(shared.id, (current) => ({ ...current, timeoutSeconds: 11 }), LATER),
            other.update(shared.id, (current) => ({ ...current, filters: ["Acme.*"] }), LATER),
          ]),
        waiters: 2,
      });
      expect(settled.map((result) => result.status)).toEqual(["fulfilled", "fulfilled"]);
      expect(await connectors.findById(shared.id)).toMatchObject({ timeoutSeconds: 11, filters: ["Acme.*"] });
    });

    it("a check that ends while the upstream is being changed records nothing", async () => {
      if (database().kind !== "postgres") return;
      const checked = await connectors.insert(draft("checked"), CREATED);
      const healthy = { state: "healthy", errorMessage: undefined, lastChecked: LATER } as const;
      const settled = await whileHeld(pool(), {
        hold: (holder) =>
          holder.query("UPDATE connectors SET url = 'https://example.com/upack/moved' WHERE id = $1", [checked.id]),
        race: () => Promise.allSettled([other.recordHealth(checked, healthy)]),
        waiters: 1,
      });
      const moved = { ...checked, url: "https://example.com/upack/moved", health: UNKNOWN };
      expect(settled).toEqual([{ status: "fulfilled", value: moved }]);
      expect(await other.findById(checked.id)).toEqual(moved);
    });

    it("resealing keeps a password another writer changed meanwhile, and does not count it", async () => {
      if (database().kind !== "postgres") return;
      const sealed = await connectors.insert(draft("sealed", { password: "plain" }), CREATED);
      const settled = await whileHeld(pool(), {
        hold: (holder) => holder.query("UPDATE connectors SET password = 'v1:newer' WHERE id = $1", [sealed.id]),
        race: () =>
          Promise.allSettled([
            connectors.resealPasswords((_, stored) => (stored === "plain" ? "v1:resealed" : undefined)),
          ]),
        waiters: 1,
      });
      expect(settled).toEqual([{ status: "fulfilled", value: 0 }]);
      expect((await connectors.findById(sealed.id))?.password).toBe("v1:newer");
    });
  });

  describe("metadata cache", () => {
    let cache: MetadataCacheRepository;
    let connectorIds: number[];

    beforeAll(async () => {
      cache = cacheOn(database());
      const connectors = connectorsOn(database());
      connectorIds = [
        (await connectors.insert(draft("cache-1"), CREATED)).id,
        (await connectors.insert(draft("cache-2"), CREATED)).id,
      ];
    });

    it("keeps an answer per connector and request, and replaces it", async () => {
      const [one, two] = connectorIds as [number, number];
      expect(await cache.find(one, "packages")).toBeUndefined();
      await cache.store(one, "packages", answer(200, CREATED, '{"v":1}'), 10);
      await cache.store(two, "packages", answer(404, CREATED), 10);
      expect(await cache.find(one, "packages")).toEqual(answer(200, CREATED, '{"v":1}'));
      expect(await cache.find(two, "packages")).toEqual(answer(404, CREATED));
      await cache.store(one, "packages", answer(404, LATER), 10);
      expect(await cache.find(one, "packages")).toEqual(answer(404, LATER));
      expect(await cache.find(one, "versions?name=x")).toBeUndefined();
    });

    it("forgets an answer, and forgets nothing quietly", async () => {
      const [one, two] = connectorIds as [number, number];
      await cache.forget(one, "packages");
      await cache.forget(one, "packages");
      expect(await cache.find(one, "packages")).toBeUndefined();
      expect(await cache.find(two, "packages")).toEqual(answer(404, CREATED));
    });

    it("keeps at most `keep` answers: 404s go first, then the least recently fetched 200s, ties by key", async () => {
      const { exec } = database();
      const [one, two] = connectorIds as [number, number];
      const at = (minute: number) => `2026-11-29T10:${String(minute).padStart(2, "0")}:00.000Z`;
      await cache.store(one, "a", answer(200, at(1)), 4);
      await cache.store(one, "b", answer(404, at(9)), 4);
      await cache.store(one, "c", answer(200, at(2)), 4);
      await cache.store(one, "d", answer(200, at(2)), 4);
      // Full: the 404 goes, though it is the newest.
      await cache.store(one, "e", answer(200, at(3)), 4);
      const keys = async (id: number) =>
        (
          await exec("SELECT request_key FROM connector_metadata WHERE connector_id = ? ORDER BY request_key", [id])
        ).map((row) => row.request_key);
      expect(await keys(one)).toEqual(["a", "c", "d", "e"]);
      // Then the oldest 200; of two fetched at once, the greater key.
      await cache.store(one, "f", answer(200, at(4)), 4);
      expect(await keys(one)).toEqual(["c", "d", "e", "f"]);
      await cache.store(one, "g", answer(200, at(5)), 4);
      expect(await keys(one)).toEqual(["c", "e", "f", "g"]);
      // Replacing a kept answer trims to the bound too, never the answer being stored.
      await cache.store(one, "c", answer(200, at(6)), 2);
      expect(await keys(one)).toEqual(["c", "g"]);
      await cache.store(one, "z", answer(200, at(0)), 0);
      expect(await keys(one)).toEqual(["z"]);
      // Another connector's answers are not counted.
      expect(await keys(two)).toEqual(["packages"]);
    });

    it("refuses an answer for a connector that is gone, as the foreign key does", async () => {
      await expect(cache.store(999_999, "packages", answer(200, CREATED), 10)).rejects.toSatisfy(isForeignKeyViolation);
    });

    it("tells the node's caches of each write at once (PostgreSQL)", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const [one] = connectorIds as [number];
      const before = db.commits();
      await cache.store(one, "counted", answer(200, CREATED), 10);
      await cache.forget(one, "counted");
      await cache.find(one, "counted");
      expect(db.commits()).toBe(before + 2);
    });

    it("two nodes storing for one connector at once keep the bound (PostgreSQL)", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      await onOtherNode(db, createPostgresMetadataCacheRepository, async (other) => {
        const [, two] = connectorIds as [number, number];
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 === 0 ? cache : other).store(
              two,
              `k${i}`,
              answer(200, `2026-11-29T12:00:${String(i).padStart(2, "0")}.000Z`),
              3,
            ),
          ),
        );
        const [{ count }] = (await db.exec("SELECT count(*) AS count FROM connector_metadata WHERE connector_id = ?", [
          two,
        ])) as [{ count: number }];
        expect(count).toBeGreaterThan(0);
        expect(count).toBeLessThanOrEqual(3);
      });
    });

    it("skips a write, at once and without an error, while another writer holds what it needs (PostgreSQL)", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const [one] = connectorIds as [number];
      await cache.store(one, "kept", answer(200, CREATED), 10);
      const holder = new pg.Client({ connectionString: db.postgres.pool.options.connectionString as string });
      await holder.connect();
      try {
        // A connector being updated (its row locked): the store is skipped.
        await holder.query("BEGIN");
        await holder.query("SELECT 1 FROM connectors WHERE id = $1 FOR UPDATE", [one]);
        let started = performance.now();
        await cache.store(one, "skipped", answer(200, CREATED), 10);
        expect(performance.now() - started).toBeLessThan(1_000);
        await holder.query("ROLLBACK");
        expect(await cache.find(one, "skipped")).toBeUndefined();
        // The answer itself locked: the forget is skipped.
        await holder.query("BEGIN");
        await holder.query(
          "UPDATE connector_metadata SET body = body WHERE connector_id = $1 AND request_key = 'kept'",
          [one],
        );
        started = performance.now();
        await cache.forget(one, "kept");
        expect(performance.now() - started).toBeLessThan(1_000);
        await holder.query("ROLLBACK");
        expect(await cache.find(one, "kept")).toEqual(answer(200, CREATED));
      } finally {
        await holder.end();
      }
    });
  });
});
