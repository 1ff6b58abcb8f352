import { beforeAll, expect, it } from "vitest";
import type { StorageConfig } from "../../../src/domain/package-store.js";
import { blobReferenceCheck, type BlobReferenceCheck } from "../../../src/storage/blob-keeper.js";
import { postgresBlobReferenceCheck } from "../../../src/storage/blob-keeper-postgres.js";
import { createPostgresBlobStoreRows } from "../../../src/storage/blob-stores-postgres.js";
import { openPostgres } from "../../../src/storage/postgres/connection.js";
import { createSecretBox, generateSecretKey, parseSecretKey, type SecretKey } from "../../../src/storage/secrets.js";
import { resealStorageCredentials, type StorageResealResult } from "../../../src/storage/storage-reseal.js";
import { resealPostgresStorageCredentials } from "../../../src/storage/storage-reseal-postgres.js";
import { openStorageSecrets, sealStorageSecrets } from "../../../src/storage/storage-secrets.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";

const T0 = "2026-11-29T10:00:00.000Z";
const sha = (c: string) => c.repeat(64);
const key = (): SecretKey => parseSecretKey(generateSecretKey()) as SecretKey;
const s3 = (secret: string): StorageConfig =>
  ({
    id: "s3",
    properties: { AccessKey: "AK", SecretAccessKey: secret, RegionEndpoint: "us-east-1", BucketName: "b" },
  }) as StorageConfig;

const checkOn = (database: TestDatabase): BlobReferenceCheck =>
  database.kind === "sqlite" ? blobReferenceCheck(database.sqlite) : postgresBlobReferenceCheck(database.postgres);
const resealOn = (database: TestDatabase, box: ReturnType<typeof createSecretBox>): Promise<StorageResealResult> =>
  database.kind === "sqlite"
    ? Promise.resolve(resealStorageCredentials(database.sqlite, box))
    : resealPostgresStorageCredentials(database.postgres, box);

describeOnBothDatabases("Blob references and storage credentials", (database) => {
  let feedId: number;
  beforeAll(async () => {
    const { exec } = database();
    [{ id: feedId }] = (await exec(
      "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES ('a', 'asset', 'k-a', '{}', ?, ?) RETURNING id",
      [T0, T0],
    )) as [{ id: number }];
    const [{ id: packageId }] = (await exec(
      "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, '', 'p', '', 'p') RETURNING id",
      [feedId],
    )) as [{ id: number }];
    const [{ id: versionId }] = (await exec(
      `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
         file_list, is_virtual, published_at) VALUES (?, '1', '1', '1', '{}', ?, 'x', 1, '[]', 0, ?) RETURNING id`,
      [packageId, sha("a"), T0],
    )) as [{ id: number }];
    await exec(
      "INSERT INTO upack_assembled (version_id, blob_sha256, sha1, size, assembled_at) VALUES (?, ?, 'x', 1, ?)",
      [versionId, sha("b"), T0],
    );
    await exec(
      `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, md5, sha1, sha512,
         created_at, modified_at) VALUES (?, 'f', 'f', '', 0, ?, 1, 'm', 's', 'x', ?, ?)`,
      [feedId, sha("c"), T0, T0],
    );
  });

  it("tells which blobs a row references, one at a time and by batch (each once)", async () => {
    const check = checkOn(database());
    for (const c of ["a", "b", "c"]) expect(await check(sha(c))).toBe(true);
    expect(await check(sha("d"))).toBe(false);
    expect(await check.unreferencedAmong?.([])).toEqual([]);
    const unreferenced = await check.unreferencedAmong?.([sha("a"), sha("d"), sha("b"), sha("e"), sha("d"), sha("c")]);
    expect([...(unreferenced ?? [])].sort()).toEqual([sha("d"), sha("e")]);
  });

  it("reseals feeds' and stores' credentials sealed by a previous key, and names those no key opens", async () => {
    const db = database();
    const old = key();
    const lost = key();
    const current = key();
    const sealedOld = sealStorageSecrets(s3("old-secret"), createSecretBox(old));
    const sealedLost = sealStorageSecrets(s3("lost-secret"), createSecretBox(lost));
    const settings = JSON.stringify({ retentionRules: [], storage: sealedOld, z: 1 });
    await db.exec(
      "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES ('old', 'asset', 'k-old', ?, ?, ?), ('lost', 'asset', 'k-lost', ?, ?, ?), ('nul', 'asset', 'k-nul', '{\"storage\":null}', ?, ?)",
      [settings, T0, T0, JSON.stringify({ storage: sealedLost }), T0, T0, T0, T0],
    );
    await db.exec(
      "INSERT INTO blob_stores (key, kind, config, first_used_at, last_used_at) VALUES ('s3:one', 's3', ?, ?, ?), ('s3:two', 's3', ?, ?, ?)",
      [JSON.stringify(sealedOld), T0, T0, JSON.stringify(sealedLost), T0, T0],
    );
    const box = createSecretBox(current, [old]);
    expect(await resealOn(db, box)).toEqual({ resealed: 2, unreadable: ["feed lost", "store s3:two"] });
    const [feed] = (await db.exec("SELECT settings FROM feeds WHERE name = 'old'")) as [{ settings: string }];
    const stored = JSON.parse(feed.settings) as { storage: StorageConfig };
    expect(Object.keys(stored)).toEqual(["retentionRules", "storage", "z"]);
    expect(openStorageSecrets(stored.storage, createSecretBox(current))).toEqual(s3("old-secret"));
    const [store] = (await db.exec("SELECT config FROM blob_stores WHERE key = 's3:one'")) as [{ config: string }];
    expect(openStorageSecrets(JSON.parse(store.config) as StorageConfig, createSecretBox(current))).toEqual(
      s3("old-secret"),
    );
    // Done once: the next start finds nothing to reseal.
    expect(await resealOn(db, box)).toEqual({ resealed: 0, unreadable: ["feed lost", "store s3:two"] });
    await db.exec("DELETE FROM feeds WHERE name IN ('old', 'lost', 'nul')");
    await db.exec("DELETE FROM blob_stores");
  });

  it("nodes resealing at once: each row resealed once, nothing lost (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const old = key();
    const current = key();
    await db.exec(
      "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES ('r', 'asset', 'k-r', ?, ?, ?)",
      [JSON.stringify({ storage: sealStorageSecrets(s3("s"), createSecretBox(old)) }), T0, T0],
    );
    const pools = [0, 1].map(() =>
      openPostgres(db.postgres.pool.options.connectionString as string, {
        applicationName: "wharf test, another node",
      }),
    );
    try {
      const box = createSecretBox(current, [old]);
      const results = await Promise.all(
        pools.map((pool) => resealPostgresStorageCredentials({ pool, committed: () => undefined }, box)),
      );
      expect(results.map((result) => result.resealed).sort()).toEqual([0, 1]);
      const [feed] = (await db.exec("SELECT settings FROM feeds WHERE name = 'r'")) as [{ settings: string }];
      const storage = (JSON.parse(feed.settings) as { storage: StorageConfig }).storage;
      expect(openStorageSecrets(storage, createSecretBox(current))).toEqual(s3("s"));
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it("records known stores and reads a feed's storage setting as blob-stores.ts does (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const rows = createPostgresBlobStoreRows(db.postgres);
    const sealed = sealStorageSecrets(s3("x"), createSecretBox(key()));
    await Promise.all([rows.record("s3:b", "s3", sealed, T0), rows.record("s3:b", "s3", sealed, T0)]);
    await rows.record("s3:a", "s3", sealed, T0);
    await rows.record("s3:b", "s3", s3("changed"), "2027-01-01T00:00:00.000Z");
    expect(await rows.known()).toEqual([
      { key: "s3:a", config: sealed },
      { key: "s3:b", config: s3("changed") },
    ]);
    expect(await db.exec("SELECT first_used_at, last_used_at FROM blob_stores WHERE key = 's3:b'")).toEqual([
      { first_used_at: T0, last_used_at: "2027-01-01T00:00:00.000Z" },
    ]);
    await db.exec(
      "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES ('st', 'asset', 'k-st', ?, ?, ?), ('nu', 'asset', 'k-nu', '{\"storage\":null}', ?, ?)",
      [JSON.stringify({ storage: sealed }), T0, T0, T0, T0],
    );
    const [{ id: withStorage }] = (await db.exec("SELECT id FROM feeds WHERE name = 'st'")) as [{ id: number }];
    const [{ id: nullStorage }] = (await db.exec("SELECT id FROM feeds WHERE name = 'nu'")) as [{ id: number }];
    expect(await rows.feedStorage(withStorage)).toEqual(sealed);
    expect(await rows.feedStorage(nullStorage)).toBeUndefined();
    expect(await rows.feedStorage(feedId)).toBeUndefined();
    expect(await rows.feedStorage(999_999)).toBeUndefined();
  });
});
