import { beforeAll, expect, it } from "vitest";
import {
  createPromotionRepository,
  type PromotionRepository,
  type PromotionRow,
  type RepackagingRow,
} from "../../../src/areas/promotions/repository.js";
import { createPostgresPromotionRepository } from "../../../src/areas/promotions/repository-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";

const T0 = "2026-11-29T10:00:00.000Z";

const repositoryOn = (database: TestDatabase): PromotionRepository =>
  database.kind === "sqlite"
    ? createPromotionRepository(database.sqlite)
    : createPostgresPromotionRepository(database.postgres);

/** A row as SELECT * reads it: the row type's columns and the keys and ids it leaves out. */
type Stored<Row> = Row & Record<string, unknown>;

describeOnBothDatabases("promotion repository", (database) => {
  let records: PromotionRepository;
  const p: Stored<PromotionRow>[] = [];
  const r: Stored<RepackagingRow>[] = [];
  let eventId = 100;

  const promotion = async (from: number | null, to: number | null, group: string, name: string, version: string) => {
    const row = {
      promoted_at: T0,
      from_feed_id: from,
      from_feed_name: from === null ? "" : `feed${from}`,
      to_feed_id: to,
      to_feed_name: to === null ? "" : `feed${to}`,
      package_group: group,
      package_name: name,
      version,
      group_key: group.toLowerCase(),
      name_key: name.toLowerCase(),
      version_key: version.toLowerCase(),
      from_version_id: from === null ? null : 7,
      sha1: "a".repeat(40),
      sha256: null,
      promoted_by: "Ann",
      comments: from === null ? null : "ok",
      event_id: eventId++,
    };
    const columns = Object.keys(row);
    const [{ id }] = (await database().exec(
      `INSERT INTO package_promotions (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) RETURNING id`,
      Object.values(row),
    )) as [{ id: number }];
    p.push({ id, ...row });
  };

  const repackaging = async (
    feed: number | null,
    group: string,
    name: string,
    version: string,
    from: number | null,
    fromVersion: string,
  ) => {
    const row = {
      repackaged_at: T0,
      feed_id: feed,
      feed_name: feed === null ? "" : `feed${feed}`,
      package_group: group,
      package_name: name,
      group_key: group.toLowerCase(),
      name_key: name.toLowerCase(),
      new_version: version,
      new_version_key: version.toLowerCase(),
      from_feed_id: from,
      from_feed_name: from === null ? "" : `feed${from}`,
      from_version: fromVersion,
      from_sha1: null,
      from_sha256: "b".repeat(64),
      repackaged_by: "Bob",
      comments: null,
      event_id: eventId++,
    };
    const columns = Object.keys(row);
    const [{ id }] = (await database().exec(
      `INSERT INTO package_repackagings (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) RETURNING id`,
      Object.values(row),
    )) as [{ id: number }];
    r.push({ id, ...row });
  };

  beforeAll(async () => {
    records = repositoryOn(database());
    await promotion(1, 2, "Tools", "App", "1.0.0"); // p[0]
    await promotion(2, 3, "Tools", "App", "1.0.0"); // p[1]
    await promotion(1, 3, "", "Lib", "2.0.0-RC"); // p[2]
    await promotion(null, 1, "Tools", "App", "1.1.0"); // p[3]: its source feed is gone
    await promotion(3, 1, "Tools", "Other", "1.0.0"); // p[4]
    await promotion(1, 2, "Tools", "App", "1.1.0"); // p[5]
    await repackaging(1, "Tools", "App", "1.0.0", 2, "1.0.0-CI.5"); // r[0]
    await repackaging(2, "Tools", "App", "1.0.1", 1, "1.0.0"); // r[1]
    await repackaging(1, "", "Lib", "2.0.0", null, "ÄBC"); // r[2]
    await repackaging(3, "Tools", "App", "3.0.0", 3, "3.0.0-RC"); // r[3]
  });

  const pick = <Row>(rows: Row[], ...indexes: number[]) => indexes.map((i) => rows[i]);

  it("lists promotions newest first, whole, up to the limit", async () => {
    expect(await records.listPromotions({}, 100)).toEqual(pick(p, 5, 4, 3, 2, 1, 0));
    expect(await records.listPromotions({}, 2)).toEqual(pick(p, 5, 4));
  });

  it("filters promotions by a feed on either side, by source, by target, by package and version keys, and pages", async () => {
    expect(await records.listPromotions({ feedId: 1 }, 100)).toEqual(pick(p, 5, 4, 3, 2, 0));
    expect(await records.listPromotions({ fromFeedId: 1 }, 100)).toEqual(pick(p, 5, 2, 0));
    expect(await records.listPromotions({ toFeedId: 3 }, 100)).toEqual(pick(p, 2, 1));
    expect(await records.listPromotions({ feedId: 2, toFeedId: 3 }, 100)).toEqual(pick(p, 1));
    expect(await records.listPromotions({ groupKey: "tools", nameKey: "app" }, 100)).toEqual(pick(p, 5, 3, 1, 0));
    expect(await records.listPromotions({ groupKey: "", nameKey: "lib" }, 100)).toEqual(pick(p, 2));
    expect(await records.listPromotions({ versionKey: "1.0.0" }, 100)).toEqual(pick(p, 4, 1, 0));
    expect(await records.listPromotions({ versionKey: "2.0.0-rc" }, 100)).toEqual(pick(p, 2));
    // Keys are lowercased by the caller: a key as given does not match.
    expect(await records.listPromotions({ nameKey: "App" }, 100)).toEqual([]);
    expect(await records.listPromotions({ beforeId: p[3]?.id }, 100)).toEqual(pick(p, 2, 1, 0));
    expect(
      await records.listPromotions({ feedId: 1, groupKey: "tools", nameKey: "app", beforeId: p[5]?.id }, 100),
    ).toEqual(pick(p, 3, 0));
    expect(
      await records.listPromotions(
        {
          feedId: 1,
          fromFeedId: 1,
          toFeedId: 2,
          groupKey: "tools",
          nameKey: "app",
          versionKey: "1.1.0",
          beforeId: 1e9,
        },
        100,
      ),
    ).toEqual(pick(p, 5));
    expect(await records.listPromotions({ feedId: 1, toFeedId: 1 }, 1)).toEqual(pick(p, 4));
    expect(await records.listPromotions({ feedId: 99 }, 100)).toEqual([]);
  });

  it("lists repackagings newest first, a version matching the new one or the original", async () => {
    expect(await records.listRepackagings({}, 100)).toEqual(pick(r, 3, 2, 1, 0));
    expect(await records.listRepackagings({}, 1)).toEqual(pick(r, 3));
    expect(await records.listRepackagings({ versionKey: "1.0.0" }, 100)).toEqual(pick(r, 1, 0));
    expect(await records.listRepackagings({ versionKey: "1.0.0-ci.5" }, 100)).toEqual(pick(r, 0));
    expect(await records.listRepackagings({ versionKey: "3.0.0-rc" }, 100)).toEqual(pick(r, 3));
    // The original's version is lowercased as SQLite's lower() does it: ASCII letters only.
    expect(await records.listRepackagings({ versionKey: "Äbc" }, 100)).toEqual(pick(r, 2));
    expect(await records.listRepackagings({ versionKey: "äbc" }, 100)).toEqual([]);
  });

  it("filters repackagings by a feed on either side, by the original's feed, by the new one's, by package, and pages", async () => {
    expect(await records.listRepackagings({ feedId: 1 }, 100)).toEqual(pick(r, 2, 1, 0));
    expect(await records.listRepackagings({ feedId: 3 }, 100)).toEqual(pick(r, 3));
    expect(await records.listRepackagings({ fromFeedId: 1 }, 100)).toEqual(pick(r, 1));
    expect(await records.listRepackagings({ toFeedId: 1 }, 100)).toEqual(pick(r, 2, 0));
    expect(await records.listRepackagings({ groupKey: "", nameKey: "lib" }, 100)).toEqual(pick(r, 2));
    expect(await records.listRepackagings({ groupKey: "tools", nameKey: "app", beforeId: r[3]?.id }, 100)).toEqual(
      pick(r, 1, 0),
    );
    expect(
      await records.listRepackagings({ feedId: 2, fromFeedId: 2, toFeedId: 1, versionKey: "1.0.0-ci.5" }, 100),
    ).toEqual(pick(r, 0));
    expect(await records.listRepackagings({ feedId: 1, versionKey: "9.9.9" }, 100)).toEqual([]);
  });
});
