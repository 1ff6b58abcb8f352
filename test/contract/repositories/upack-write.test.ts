import { beforeAll, describe, expect, it } from "vitest";
import {
  createUpackWriteRepository,
  type NewVersion,
  type UpackWriteRepository,
} from "../../../src/areas/upack/repository.js";
import { createPostgresUpackWriteRepository } from "../../../src/areas/upack/repository-postgres.js";
import { versionSortKey } from "../../../src/domain/upack-version-sort.js";
import { parseVersion } from "../../../src/domain/upack-version.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

const T0 = "2026-11-29T10:00:00.000Z";
const clock = { now: () => new Date(T0) };
const UPLOAD = { actor: "ann" };

const refusal = (kind: string, code: string) => expect.objectContaining({ kind, code });

const sortKeyOf = (version: string) => {
  const parsed = parseVersion(version);
  if (parsed === undefined) throw new Error(`bad version ${version}`);
  return versionSortKey(parsed);
};

function newVersion(feedId: number, group: string, name: string, version: string, fields: Partial<NewVersion> = {}) {
  return {
    feedId,
    group,
    name,
    version,
    sortKey: sortKeyOf(version),
    manifest: JSON.stringify({ name, version, title: `${name} ${version}`, tags: ["t1", "t2"] }),
    blobSha256: `sha256-${name}-${version}`,
    sha1: `sha1-${version}`,
    size: 100,
    fileList: "[]",
    isVirtual: false,
    publishedAt: T0,
    publishedBy: "ann",
    ...fields,
  } satisfies NewVersion;
}

type StoredPackage = Record<string, unknown> & {
  versions_desc: string;
  latest_version_id: number | null;
  versions: Array<Record<string, unknown>>;
};

const repositoryOn = (database: TestDatabase): UpackWriteRepository =>
  database.kind === "sqlite"
    ? createUpackWriteRepository(database.sqlite, clock)
    : createPostgresUpackWriteRepository(database.postgres, clock);

describeOnBothDatabases("Universal package write repository", (database) => {
  let repository: UpackWriteRepository;
  let feeds = 0;

  const newFeed = (name = `feed${++feeds}`) => insertFeed(database().exec, name, T0);

  /** Every package of the feed with its versions, as stored. */
  async function stored(feedId: number): Promise<StoredPackage[]> {
    const packages = await database().exec(
      `SELECT id, group_name, name, group_key, name_key, latest_version_id, versions_desc, downloads, search_text
         FROM upack_packages WHERE feed_id = ? ORDER BY group_key, name_key`,
      [feedId],
    );
    return Promise.all(
      packages.map(async (pkg) => ({
        ...pkg,
        versions: await database().exec(
          `SELECT id, version, version_key, manifest, blob_sha256, sha1, md5, sha512, size, file_list, is_virtual,
                  is_cached, downloads, published_at, published_by
             FROM upack_versions WHERE package_id = ? ORDER BY sort_key DESC`,
          [pkg.id],
        ),
      })) as Promise<StoredPackage>[],
    );
  }

  const events = async (feedId: number) =>
    database().exec(
      `SELECT occurred_at, type, feed_id, feed_name, package_group, package_name, package_version, actor, data
         FROM lifecycle_events WHERE feed_id = ? ORDER BY id`,
      [feedId],
    );

  beforeAll(() => {
    repository = repositoryOn(database());
  });

  it("saves new versions: the package's latest version, versions newest first and search text follow", async () => {
    const feedId = await newFeed();
    expect(await repository.findVersion(feedId, { group: "", name: "Tool", version: "1.0.0" })).toBeUndefined();
    const outcomes = await repository.saveVersions(
      [
        newVersion(feedId, "", "Tool", "1.2.0-beta", { md5: "m", sha512: "s", publishedBy: undefined }),
        newVersion(feedId, "", "Tool", "1.10.0"),
        newVersion(feedId, "", "Tool", "1.2.0"),
      ],
      { replace: false, cause: UPLOAD },
    );
    expect(outcomes).toEqual([
      { versionId: expect.any(Number), replaced: false },
      { versionId: expect.any(Number), replaced: false },
      { versionId: expect.any(Number), replaced: false },
    ]);
    const [beta, ten, two] = outcomes.map((outcome) => outcome.versionId);
    const [pkg] = await stored(feedId);
    expect(pkg).toEqual({
      id: expect.any(Number),
      group_name: "",
      name: "Tool",
      group_key: "",
      name_key: "tool",
      latest_version_id: ten,
      versions_desc: '["1.10.0","1.2.0","1.2.0-beta"]',
      downloads: 0,
      search_text: "Tool 1.10.0\n\n\nt1\nt2",
      versions: [
        expect.objectContaining({ id: ten, version: "1.10.0", md5: null, sha512: null, published_by: "ann" }),
        expect.objectContaining({ id: two, version: "1.2.0" }),
        {
          id: beta,
          version: "1.2.0-beta",
          version_key: "1.2.0-beta",
          manifest: newVersion(feedId, "", "Tool", "1.2.0-beta").manifest,
          blob_sha256: "sha256-Tool-1.2.0-beta",
          sha1: "sha1-1.2.0-beta",
          md5: "m",
          sha512: "s",
          size: 100,
          file_list: "[]",
          is_virtual: 0,
          is_cached: 0,
          downloads: 0,
          published_at: T0,
          published_by: null,
        },
      ],
    });
    expect(await repository.findVersion(feedId, { group: "", name: "TOOL", version: "1.2.0-BETA" })).toEqual({
      id: beta,
      version: "1.2.0-beta",
      blobSha256: "sha256-Tool-1.2.0-beta",
    });
    expect(await repository.findVersion(feedId, { group: "", name: "Tool", version: "9.9.9" })).toBeUndefined();
    expect(await repository.findVersion(feedId, { group: "x", name: "Tool", version: "1.2.0" })).toBeUndefined();
    expect(await events(feedId)).toEqual(
      ["1.2.0-beta", "1.10.0", "1.2.0"].map((version) => ({
        occurred_at: T0,
        type: "package.added",
        feed_id: feedId,
        feed_name: `feed${feeds}`,
        package_group: "",
        package_name: "Tool",
        package_version: version,
        actor: "ann",
        data: "{}",
      })),
    );
  });

  it("spells a package as its most recently saved version does, in groups too", async () => {
    const feedId = await newFeed();
    await repository.saveVersions([newVersion(feedId, "Apps/Web", "Site", "1.0.0")], {
      replace: false,
      cause: UPLOAD,
    });
    await repository.saveVersions(
      [newVersion(feedId, "apps/WEB", "SITE", "2.0.0"), newVersion(feedId, "APPS/web", "site", "3.0.0")],
      { replace: false, cause: UPLOAD },
    );
    const [pkg] = await stored(feedId);
    expect(pkg).toMatchObject({ group_name: "APPS/web", name: "site", group_key: "apps/web", name_key: "site" });
    expect(pkg?.versions_desc).toBe('["3.0.0","2.0.0","1.0.0"]');
    expect((await stored(feedId)).length).toBe(1);
  });

  it("refuses an existing version without replace (VERSION_EXISTS), saving none of the batch", async () => {
    const feedId = await newFeed();
    await repository.saveVersions([newVersion(feedId, "g", "Lib", "1.0.0")], { replace: false, cause: UPLOAD });
    const before = await stored(feedId);
    const attempt = repository.saveVersions(
      [newVersion(feedId, "g", "Other", "1.0.0"), newVersion(feedId, "G", "LIB", "1.0.0", { blobSha256: "new" })],
      { replace: false, cause: UPLOAD },
    );
    await expect(attempt).rejects.toMatchObject({
      kind: "conflict",
      code: "VERSION_EXISTS",
      message:
        "Version 1.0.0 of package G/LIB already exists; overwriting it needs the overwrite/delete permission " +
        "(Feeds_OverwritePackage).",
    });
    expect(await stored(feedId)).toEqual(before);
    expect(await events(feedId)).toHaveLength(1);
  });

  it("replaces an existing version in place, keeping its id and downloads, and tells what it replaced", async () => {
    const feedId = await newFeed();
    const [first] = await repository.saveVersions(
      [newVersion(feedId, "", "App", "1.0.0"), newVersion(feedId, "", "App", "0.9.0")],
      { replace: false, cause: UPLOAD },
    );
    await database().exec("UPDATE upack_versions SET downloads = 7 WHERE id = ?", [first?.versionId]);
    const manifest = JSON.stringify({ name: "App", version: "1.0.0", title: "Renamed", tags: [] });
    const outcomes = await repository.saveVersions(
      [newVersion(feedId, "", "app", "1.0.0", { blobSha256: "other", manifest, isVirtual: true })],
      { replace: true, cause: { actor: "bob", as: "package.promoted", data: { fromFeed: "a" } } },
    );
    expect(outcomes).toEqual([{ versionId: first?.versionId, replaced: true, replacedBlob: "sha256-App-1.0.0" }]);
    const [pkg] = await stored(feedId);
    expect(pkg).toMatchObject({
      name: "app",
      latest_version_id: first?.versionId,
      versions_desc: '["1.0.0","0.9.0"]',
      downloads: 7,
      search_text: "Renamed\n\n\n",
    });
    expect(pkg?.versions[0]).toMatchObject({ blob_sha256: "other", manifest, is_virtual: 1, downloads: 7 });
    expect((await events(feedId)).slice(2)).toEqual([
      expect.objectContaining({
        type: "package.promoted",
        package_name: "app",
        package_version: "1.0.0",
        actor: "bob",
        data: '{"fromFeed":"a"}',
      }),
    ]);
    await repository.saveVersions([newVersion(feedId, "", "App", "0.9.0")], { replace: true, cause: UPLOAD });
    expect((await events(feedId)).at(-1)).toMatchObject({ type: "package.overwritten", package_version: "0.9.0" });
  });

  it("writes no event for a connector's cached copy", async () => {
    const feedId = await newFeed();
    await repository.saveVersions([newVersion(feedId, "", "Pulled", "1.0.0", { isCached: true })], {
      replace: false,
      cause: UPLOAD,
    });
    expect((await stored(feedId))[0]?.versions[0]).toMatchObject({ is_cached: 1 });
    expect(await events(feedId)).toEqual([]);
  });

  it("deletes versions, refreshing the package, and the package with its last version", async () => {
    const feedId = await newFeed();
    const saved = await repository.saveVersions(
      [newVersion(feedId, "", "Gone", "1.0.0"), newVersion(feedId, "", "Gone", "2.0.0")],
      { replace: false, cause: UPLOAD },
    );
    const [one, two] = saved.map((outcome) => outcome.versionId);
    await database().exec("UPDATE upack_versions SET downloads = 3 WHERE id = ?", [one]);
    await database().exec("UPDATE upack_versions SET downloads = 4 WHERE id = ?", [two]);
    // The version's assembled copy (migration 0005) goes with it.
    await database().exec(
      "INSERT INTO upack_assembled (version_id, blob_sha256, sha1, size, assembled_at) VALUES (?, 'a', 'b', 1, ?)",
      [two, T0],
    );
    expect(
      await repository.deleteVersion(feedId, { group: "", name: "nope", version: "1.0.0" }, UPLOAD),
    ).toBeUndefined();
    expect(
      await repository.deleteVersion(feedId, { group: "", name: "gone", version: "3.0.0" }, UPLOAD),
    ).toBeUndefined();

    expect(await repository.deleteVersion(feedId, { group: "", name: "GONE", version: "2.0.0" }, UPLOAD)).toEqual({
      id: two,
      version: "2.0.0",
      blobSha256: "sha256-Gone-2.0.0",
    });
    expect(await database().exec("SELECT version_id FROM upack_assembled WHERE version_id = ?", [two])).toEqual([]);
    const [pkg] = await stored(feedId);
    expect(pkg).toMatchObject({ latest_version_id: one, versions_desc: '["1.0.0"]', downloads: 3 });

    expect(
      await repository.deleteVersion(
        feedId,
        { group: "", name: "gone", version: "1.0.0" },
        { actor: "Wharf", as: "package.purged" },
      ),
    ).toEqual({ id: one, version: "1.0.0", blobSha256: "sha256-Gone-1.0.0" });
    expect(await stored(feedId)).toEqual([]);
    expect((await events(feedId)).slice(2)).toEqual([
      expect.objectContaining({
        type: "package.deleted",
        package_name: "GONE",
        package_version: "2.0.0",
        actor: "ann",
      }),
      expect.objectContaining({
        type: "package.purged",
        package_name: "gone",
        package_version: "1.0.0",
        actor: "Wharf",
      }),
    ]);
  });

  it("deletes a version only while it has the expected blob: a stale one leaves it and says so", async () => {
    const feedId = await newFeed();
    const id = { group: "", name: "Kept", version: "1.0.0" };
    const purge = { actor: "retention", as: "package.purged" as const };
    await repository.saveVersions([newVersion(feedId, "", "Kept", "1.0.0", { blobSha256: "first" })], {
      replace: false,
      cause: UPLOAD,
    });
    // Uploaded again with other bytes after a reader (retention) saw "first".
    const [replacement] = await repository.saveVersions(
      [newVersion(feedId, "", "Kept", "1.0.0", { blobSha256: "second" })],
      { replace: true, cause: UPLOAD },
    );
    const current = { id: replacement?.versionId, version: "1.0.0", blobSha256: "second" };

    expect(await repository.deleteVersion(feedId, id, purge, { expectedBlob: "first" })).toBeUndefined();
    expect(await repository.findVersion(feedId, id)).toEqual(current);
    expect((await stored(feedId))[0]?.versions_desc).toBe('["1.0.0"]');
    expect((await events(feedId)).map((event) => event.type)).toEqual(["package.added", "package.overwritten"]);

    expect(await repository.deleteVersion(feedId, id, purge, { expectedBlob: "second" })).toEqual(current);
    expect(await stored(feedId)).toEqual([]);
    expect((await events(feedId)).map((event) => event.type)).toEqual([
      "package.added",
      "package.overwritten",
      "package.purged",
    ]);
    // Gone: the same answer as for a blob that is not the version's.
    expect(await repository.deleteVersion(feedId, id, purge, { expectedBlob: "second" })).toBeUndefined();
  });

  it("lets a feed's deletion take its packages and versions", async () => {
    const feedId = await newFeed();
    await repository.saveVersions([newVersion(feedId, "", "A", "1.0.0")], { replace: false, cause: UPLOAD });
    await database().exec("DELETE FROM feeds WHERE id = ?", [feedId]);
    expect(await stored(feedId)).toEqual([]);
    expect(
      await database().exec(
        "SELECT count(*) AS n FROM upack_versions v WHERE NOT EXISTS (SELECT 1 FROM upack_packages p WHERE p.id = v.package_id)",
      ),
    ).toEqual([{ n: 0 }]);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const feedId = await newFeed();
    const before = db.commits();
    await repository.saveVersions([newVersion(feedId, "", "C", "1.0.0")], { replace: false, cause: UPLOAD });
    await repository.deleteVersion(feedId, { group: "", name: "C", version: "1.0.0" }, UPLOAD);
    expect(db.commits()).toBe(before + 2);
  });

  it("answers VERSION_EXISTS when a writer that skips the package's lock inserts the version first (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const feedId = await newFeed();
    await repository.saveVersions([newVersion(feedId, "", "Sneaky", "1.0.0")], { replace: false, cause: UPLOAD });
    const [{ id: packageId }] = (await db.exec("SELECT id FROM upack_packages WHERE feed_id = ?", [feedId])) as [
      { id: number },
    ];
    const other = await db.postgres.pool.connect();
    try {
      await other.query("BEGIN");
      await other.query(
        `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
                                     file_list, is_virtual, published_at)
         VALUES ($1, '2.0.0', '2.0.0', $2, '{}', 'x', 'y', 1, '[]', 0, $3)`,
        [packageId, sortKeyOf("2.0.0"), T0],
      );
      const save = repository.saveVersions([newVersion(feedId, "", "Sneaky", "2.0.0")], {
        replace: false,
        cause: UPLOAD,
      });
      // The save waits on the uncommitted row in the unique index; then the row commits.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await other.query("COMMIT");
      await expect(save).rejects.toEqual(refusal("conflict", "VERSION_EXISTS"));
    } finally {
      other.release();
    }
  });

  describe("races between nodes (PostgreSQL)", () => {
    /** Repositories each on a pool of its own, as the nodes of a cluster; none on SQLite, whose writers take turns. */
    let nodes: UpackWriteRepository[] = [];
    const otherNode = otherNodesForBlock(database);
    beforeAll(() => {
      if (database().kind !== "postgres") return;
      nodes = Array.from({ length: 6 }, () => createPostgresUpackWriteRepository(otherNode(), clock));
    });

    it("lets one of many concurrent uploads of one new version win; the others get VERSION_EXISTS (PostgreSQL)", async () => {
      if (database().kind !== "postgres") return;
      const feedId = await newFeed();
      const results = await Promise.allSettled(
        nodes.map((node, i) =>
          node.saveVersions([newVersion(feedId, "", "Race", "1.0.0", { blobSha256: `b${i}` })], {
            replace: false,
            cause: UPLOAD,
          }),
        ),
      );
      const lost = results.flatMap((result) => (result.status === "rejected" ? [result.reason] : []));
      expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
      expect(lost).toEqual(Array.from({ length: nodes.length - 1 }, () => refusal("conflict", "VERSION_EXISTS")));
      const [pkg] = await stored(feedId);
      expect(pkg?.versions).toHaveLength(1);
      expect(pkg?.versions_desc).toBe('["1.0.0"]');
      expect(await events(feedId)).toHaveLength(1);
    });

    it("keeps every concurrent upload of other versions of one new package in its columns (PostgreSQL)", async () => {
      if (database().kind !== "postgres") return;
      const feedId = await newFeed();
      await Promise.all(
        nodes.map((node, i) =>
          node.saveVersions([newVersion(feedId, "", "Many", `1.${i}.0`)], { replace: false, cause: UPLOAD }),
        ),
      );
      const [pkg, ...others] = await stored(feedId);
      expect(others).toEqual([]);
      expect(pkg?.versions_desc).toBe(JSON.stringify(nodes.map((_, i) => `1.${nodes.length - 1 - i}.0`)));
      expect(pkg?.latest_version_id).toBe(pkg?.versions[0]?.id);
    });

    it("replaces one version concurrently without losing a write or deadlocking, in any order of packages (PostgreSQL)", async () => {
      if (database().kind !== "postgres") return;
      const feedId = await newFeed();
      const a = (blob: string) => newVersion(feedId, "", "A", "1.0.0", { blobSha256: blob });
      const b = (blob: string) => newVersion(feedId, "", "B", "1.0.0", { blobSha256: blob });
      await repository.saveVersions([a("a0"), b("b0")], { replace: false, cause: UPLOAD });
      const rounds = await Promise.all(
        nodes.map((node, i) =>
          node.saveVersions(i % 2 === 0 ? [a(`a${i + 1}`), b(`b${i + 1}`)] : [b(`b${i + 1}`), a(`a${i + 1}`)], {
            replace: true,
            cause: UPLOAD,
          }),
        ),
      );
      // Each replacement replaced the blob of exactly one other: the blobs form one chain.
      const replacedA = rounds.map((outcomes, i) => outcomes[i % 2 === 0 ? 0 : 1]?.replacedBlob).sort();
      const [pkgA, pkgB] = await stored(feedId);
      const finalA = pkgA?.versions[0]?.blob_sha256 as string;
      expect([...replacedA, finalA].sort()).toEqual(["a0", ...nodes.map((_, i) => `a${i + 1}`)].sort());
      expect(pkgA?.versions).toHaveLength(1);
      expect(pkgB?.versions).toHaveLength(1);
      expect(await events(feedId)).toHaveLength(2 + 2 * nodes.length);
    });

    it("never leaves a package without versions when deletes meet uploads (PostgreSQL)", async () => {
      if (database().kind !== "postgres") return;
      const feedId = await newFeed();
      await repository.saveVersions([newVersion(feedId, "", "Flux", "1.0.0")], { replace: false, cause: UPLOAD });
      const results = await Promise.all(
        nodes.map((node, i) =>
          i % 2 === 0
            ? node.deleteVersion(feedId, { group: "", name: "Flux", version: "1.0.0" }, UPLOAD)
            : node.saveVersions([newVersion(feedId, "", "Flux", `2.${i}.0`)], { replace: false, cause: UPLOAD }),
        ),
      );
      // One delete found the version; the others found nothing.
      expect(results.filter((_, i) => i % 2 === 0).filter((result) => result !== undefined)).toHaveLength(1);
      const [pkg] = await stored(feedId);
      expect(pkg?.versions.map((version) => version.version)).toEqual(["2.5.0", "2.3.0", "2.1.0"]);
      expect(pkg?.versions_desc).toBe('["2.5.0","2.3.0","2.1.0"]');
      expect(pkg?.latest_version_id).toBe(pkg?.versions[0]?.id);
    });
  });
});
