import { beforeAll, expect, it } from "vitest";
import {
  createPackageDeploymentRepository,
  deploymentCountKey,
  type NewDeployment,
  type PackageDeploymentRepository,
  type StoredDeployment,
} from "../../../src/areas/package-deployment/repository.js";
import { createPostgresPackageDeploymentRepository } from "../../../src/areas/package-deployment/repository-postgres.js";
import { isForeignKeyViolation } from "../../../src/storage/sqlite-errors.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

const T0 = "2026-11-29T10:00:00.000Z";
const iso = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();

const repositoryOn = (database: TestDatabase): PackageDeploymentRepository =>
  database.kind === "sqlite"
    ? createPackageDeploymentRepository(database.sqlite)
    : createPostgresPackageDeploymentRepository(database.postgres);

describeOnBothDatabases("package deployment repository", (database) => {
  let deployments: PackageDeploymentRepository;
  let feedId: number;
  let otherFeedId: number;
  const record = (fields: Partial<NewDeployment> = {}): NewDeployment => ({
    feedId,
    groupName: "Tools",
    packageName: "App",
    version: "1.0.0-Beta",
    application: "Shop",
    description: "nightly",
    target: "prod-eu",
    userName: "Ann",
    url: "https://ci.example/run/1",
    deployedAt: T0,
    recordedAt: T0,
    ...fields,
  });
  const events = async () =>
    database().exec(
      `SELECT occurred_at, type, feed_id, feed_name, package_group, package_name, package_version, actor, data, dispatched_at
         FROM lifecycle_events ORDER BY id`,
    );

  beforeAll(async () => {
    deployments = repositoryOn(database());
    feedId = await insertFeed(database().exec, "main", T0);
    otherFeedId = await insertFeed(database().exec, "other", T0);
  });

  let stored: StoredDeployment[] = [];

  it("stores a record with its package.deployed event, and answers it with its id", async () => {
    const first = await deployments.insert(record(), "Ann");
    expect(first).toEqual({ ...record(), id: first.id });
    const anonymous = await deployments.insert(
      record({ userName: undefined, url: undefined, deployedAt: iso(5), recordedAt: iso(6) }),
      "Anonymous",
    );
    expect(anonymous).toEqual({
      ...record({ userName: undefined, url: undefined, deployedAt: iso(5), recordedAt: iso(6) }),
      id: anonymous.id,
    });
    expect(anonymous.id).toBeGreaterThan(first.id);
    expect(await events()).toEqual([
      {
        occurred_at: T0,
        type: "package.deployed",
        feed_id: feedId,
        feed_name: "main",
        package_group: "Tools",
        package_name: "App",
        package_version: "1.0.0-Beta",
        actor: "Ann",
        data: '{"application":"Shop","target":"prod-eu","deployedBy":"Ann"}',
        dispatched_at: null,
      },
      {
        occurred_at: iso(6),
        type: "package.deployed",
        feed_id: feedId,
        feed_name: "main",
        package_group: "Tools",
        package_name: "App",
        package_version: "1.0.0-Beta",
        actor: "Anonymous",
        data: '{"application":"Shop","target":"prod-eu","deployedBy":null}',
        dispatched_at: null,
      },
    ]);
    stored = [first, anonymous];
  });

  it("refuses a record for a feed that is gone with the driver's foreign key error, writing no event", async () => {
    const before = await events();
    const refused = await deployments.insert(record({ feedId: 999_999 }), "Ann").then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isForeignKeyViolation(refused)).toBe(true);
    expect(await events()).toEqual(before);
  });

  it("lists one package's records, or one version's, newest deployment first, matched without case", async () => {
    const [first, anonymous] = stored as [StoredDeployment, StoredDeployment];
    // Same deployment time as `first`: the later id comes first.
    const twin = await deployments.insert(record({ recordedAt: iso(10) }), "Ann");
    const other = await deployments.insert(record({ version: "2.0.0", deployedAt: iso(3) }), "Ann");
    const noGroup = await deployments.insert(record({ groupName: "", deployedAt: iso(1) }), "Ann");
    await deployments.insert(record({ feedId: otherFeedId, deployedAt: iso(9) }), "Ann");
    await deployments.insert(record({ packageName: "Other", deployedAt: iso(9) }), "Ann");

    const ofPackage = { feedId, groupName: "TOOLS", packageName: "app", limit: 10 };
    expect(await deployments.list(ofPackage)).toEqual([anonymous, other, twin, first]);
    expect(await deployments.list({ ...ofPackage, limit: 2 })).toEqual([anonymous, other]);
    expect(await deployments.list({ ...ofPackage, version: "1.0.0-beta" })).toEqual([anonymous, twin, first]);
    expect(await deployments.list({ ...ofPackage, version: "2.0.0", limit: 1 })).toEqual([other]);
    expect(await deployments.list({ ...ofPackage, version: "3.0.0" })).toEqual([]);
    expect(await deployments.list({ feedId, groupName: "", packageName: "APP", limit: 10 })).toEqual([noGroup]);
    expect(await deployments.list({ ...ofPackage, feedId: 999_999 })).toEqual([]);
  });

  it("counts records by version, of a feed or of one package, in the same order", async () => {
    const all = await deployments.countsByVersion(feedId);
    expect([...all]).toEqual([
      [deploymentCountKey("", "app", "1.0.0-beta"), 1],
      [deploymentCountKey("tools", "app", "1.0.0-beta"), 3],
      [deploymentCountKey("tools", "app", "2.0.0"), 1],
      [deploymentCountKey("tools", "other", "1.0.0-beta"), 1],
    ]);
    expect([...(await deployments.countsByVersion(feedId, { groupKey: "tools", nameKey: "app" }))]).toEqual([
      [deploymentCountKey("tools", "app", "1.0.0-beta"), 3],
      [deploymentCountKey("tools", "app", "2.0.0"), 1],
    ]);
    expect([...(await deployments.countsByVersion(otherFeedId))]).toEqual([
      [deploymentCountKey("tools", "app", "1.0.0-beta"), 1],
    ]);
    expect((await deployments.countsByVersion(feedId, { groupKey: "tools", nameKey: "nothing" })).size).toBe(0);
    expect((await deployments.countsByVersion(999_999)).size).toBe(0);
  });

  it("tells the node's caches of each record at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    await deployments.insert(record({ version: "9.9.9" }), "Ann");
    await deployments.list({ feedId, groupName: "tools", packageName: "app", limit: 1 });
    await deployments.countsByVersion(feedId);
    expect(db.commits()).toBe(before + 1);
  });

  const otherNode = otherNodesForBlock(database);

  it("keeps every record and its event when two nodes record at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const nodes = [otherNode(), otherNode()].map((node) => createPostgresPackageDeploymentRepository(node));
    const before = (await events()).length;
    const made = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        nodes[i % 2]?.insert(record({ version: "5.0.0", description: `run ${i}` }), `node ${i % 2}`),
      ),
    );
    expect(new Set(made.map((made) => made?.id)).size).toBe(20);
    expect((await events()).length).toBe(before + 20);
    expect((await deployments.countsByVersion(feedId)).get(deploymentCountKey("tools", "app", "5.0.0"))).toBe(20);
  });
});
