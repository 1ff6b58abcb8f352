import { beforeAll, describe, expect, it } from "vitest";
import { createPostgresAssetRepository } from "../../../src/areas/endpoints/repository-postgres.js";
import {
  type AssetItem,
  type AssetRepository,
  createAssetRepository,
  type FileWrite,
  type StoredContent,
} from "../../../src/areas/endpoints/repository.js";
import { type AssetPath, parseAssetPath } from "../../../src/domain/asset-path.js";
import { INHERIT } from "../../../src/domain/cache-header.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

const T0 = "2026-11-29T10:00:00.000Z";
const T1 = "2026-11-29T11:00:00.000Z";
const T2 = "2026-11-29T12:00:00.000Z";

const repositoryOn = (database: TestDatabase): AssetRepository =>
  database.kind === "sqlite"
    ? createAssetRepository(database.sqlite)
    : createPostgresAssetRepository(database.postgres);

const at = (raw: string): AssetPath => parseAssetPath(raw);

/** Content whose digests are made of one hex digit, so that each is told apart at a glance. */
const content = (digit: string, size = 10): StoredContent => ({
  sha256: digit.repeat(64),
  size,
  md5: digit.repeat(32),
  sha1: digit.repeat(40),
  sha512: digit.repeat(128),
});

const file = (raw: string, stored: StoredContent, fields: Partial<FileWrite> = {}): FileWrite => ({
  path: at(raw),
  content: stored,
  contentType: undefined,
  mode: "create-or-replace",
  mayReplace: true,
  now: T0,
  ...fields,
});

/** What the repository gives for a file or folder written at `now` and never changed since. */
const fileItem = (path: string, stored: StoredContent, fields: Partial<AssetItem> = {}): AssetItem => ({
  path,
  key: path.toLowerCase(),
  isFolder: false,
  contentType: undefined,
  file: stored,
  userMetadata: {},
  cacheHeader: INHERIT,
  createdAt: T0,
  modifiedAt: T0,
  ...fields,
});
const folderItem = (path: string, fields: Partial<AssetItem> = {}): AssetItem => ({
  ...fileItem(path, content("0"), fields),
  isFolder: true,
  file: undefined,
  ...fields,
});

const refusal = (kind: string, code: string) => expect.objectContaining({ kind, code });

describeOnBothDatabases("Asset directory repository", (database) => {
  let assets: AssetRepository;
  let feedId: number;
  let otherFeedId: number;
  /** A new asset directory; its id. */
  let newFeed: () => Promise<number>;

  beforeAll(async () => {
    assets = repositoryOn(database());
    let n = 0;
    newFeed = () => insertFeed(database().exec, `assets${++n}`, T0, "asset");
    feedId = await newFeed();
    otherFeedId = await newFeed();
  });

  it("stores a file with its missing parent folders, and finds and lists items in path order", async () => {
    expect(await assets.writeFile(feedId, file("Docs/Guide/Intro.PDF", content("1")))).toEqual({
      replaced: undefined,
    });
    await assets.writeFile(feedId, file("docs/a-b.txt", content("2"), { contentType: "text/plain" }));
    await assets.writeFile(feedId, file("docs0", content("3", 0)));
    await assets.writeFile(feedId, file("docs-x", content("4")));
    await assets.writeFile(feedId, file("docs/guide/é.txt", content("5")));
    await assets.writeFile(otherFeedId, file("docs/other.txt", content("6")));

    const docs = folderItem("Docs");
    const guide = folderItem("Docs/Guide");
    const intro = fileItem("Docs/Guide/Intro.PDF", content("1"));
    const ab = fileItem("docs/a-b.txt", content("2"), { contentType: "text/plain" });
    const zero = fileItem("docs0", content("3", 0));
    const dash = fileItem("docs-x", content("4"));
    const accent = fileItem("docs/guide/é.txt", content("5"));

    expect(await assets.find(feedId, "docs/guide/intro.pdf")).toEqual(intro);
    expect(await assets.find(feedId, "docs")).toEqual(docs);
    expect(await assets.find(feedId, "Docs")).toBeUndefined();
    expect(await assets.find(feedId, "docs/other.txt")).toBeUndefined();
    // Code point order: '-' < '/' < '0' < 'a', and 'é' after every ASCII letter.
    expect(await assets.list(feedId, "", false)).toEqual([docs, dash, zero]);
    expect(await assets.list(feedId, "docs", false)).toEqual([ab, guide]);
    expect(await assets.list(feedId, "docs/guide", false)).toEqual([intro, accent]);
    expect(await assets.list(feedId, "docs", true)).toEqual([ab, guide, intro, accent]);
    expect(await assets.list(feedId, "", true)).toEqual([docs, dash, ab, guide, intro, accent, zero]);
    expect(await assets.list(feedId, "nothing", false)).toEqual([]);
    expect(await assets.list(feedId, "nothing", true)).toEqual([]);
  });

  it("finds the items at several keys at once, only those that exist", async () => {
    const found = await assets.findAll(feedId, ["docs", "docs/guide", "docs/missing", "docs/guide", "docs/other.txt"]);
    expect(found.sort((a, b) => (a.key < b.key ? -1 : 1))).toEqual([folderItem("Docs"), folderItem("Docs/Guide")]);
    expect(await assets.findAll(feedId, [])).toEqual([]);
    expect(await assets.findAll(feedId, ["nothing"])).toEqual([]);
  });

  it("replaces a file keeping its spelling, creation time and metadata, and returns the content replaced", async () => {
    await assets.updateMetadata(feedId, "docs/a-b.txt", {
      userMetadata: { owner: { value: "ann", header: false } },
      cacheHeader: { type: "TTL", value: 60 },
      now: T1,
    });
    expect(
      await assets.writeFile(feedId, file("DOCS/A-B.TXT", content("7", 20), { mode: "replace", now: T2 })),
    ).toEqual({ replaced: content("2") });
    expect(await assets.find(feedId, "docs/a-b.txt")).toEqual(
      fileItem("docs/a-b.txt", content("7", 20), {
        userMetadata: { owner: { value: "ann", header: false } },
        cacheHeader: { type: "TTL", value: 60 },
        modifiedAt: T2,
      }),
    );
    // An empty file may be replaced without the overwrite permission.
    expect(await assets.writeFile(feedId, file("docs0", content("8"), { mayReplace: false, now: T1 }))).toEqual({
      replaced: content("3", 0),
    });
    expect(await assets.find(feedId, "docs0")).toEqual(fileItem("docs0", content("8"), { modifiedAt: T1 }));
  });

  it("refuses file writes as SQLite does: exists, missing, folder, parent is a file, overwrite forbidden", async () => {
    await expect(assets.writeFile(feedId, file("docs-x", content("9"), { mode: "create" }))).rejects.toEqual(
      refusal("invalid", "ASSET_EXISTS"),
    );
    await expect(assets.writeFile(feedId, file("docs/new.txt", content("9"), { mode: "replace" }))).rejects.toEqual(
      refusal("not_found", "ASSET_NOT_FOUND"),
    );
    await expect(assets.writeFile(feedId, file("docs/guide", content("9")))).rejects.toEqual(
      refusal("invalid", "ASSET_IS_FOLDER"),
    );
    await expect(assets.writeFile(feedId, file("docs-x/inner/f.txt", content("9")))).rejects.toEqual(
      refusal("invalid", "PARENT_IS_FILE"),
    );
    await expect(assets.writeFile(feedId, file("docs-x", content("9"), { mayReplace: false }))).rejects.toEqual(
      refusal("forbidden", "OVERWRITE_FORBIDDEN"),
    );
    // Nothing of a refused write stays, not even the folders made on its way.
    await expect(
      assets.writeFile(feedId, file("new/deeper/docs-x", content("9"), { mode: "replace" })),
    ).rejects.toEqual(refusal("not_found", "ASSET_NOT_FOUND"));
    expect(await assets.find(feedId, "new")).toBeUndefined();
    expect(await assets.find(feedId, "docs-x")).toEqual(fileItem("docs-x", content("4")));
  });

  it("creates folders with their parents; an existing folder is fine, a file in the way is refused", async () => {
    await assets.createFolder(feedId, at("Empty/Inner"), T1);
    await assets.createFolder(feedId, at("empty/inner"), T2);
    expect(await assets.list(feedId, "empty", true)).toEqual([
      folderItem("Empty/Inner", { createdAt: T1, modifiedAt: T1 }),
    ]);
    expect(await assets.find(feedId, "empty")).toEqual(folderItem("Empty", { createdAt: T1, modifiedAt: T1 }));
    await expect(assets.createFolder(feedId, at("docs-x"), T1)).rejects.toEqual(refusal("invalid", "PARENT_IS_FILE"));
    await expect(assets.createFolder(feedId, at("docs-x/sub"), T1)).rejects.toEqual(
      refusal("invalid", "PARENT_IS_FILE"),
    );
  });

  it("writes a batch in one transaction: folders, files, kept files, replaced contents", async () => {
    const batchFeed = await newFeed();
    await assets.writeFile(batchFeed, file("keep.txt", content("1")));
    await assets.writeFile(batchFeed, file("swap.txt", content("2")));
    const written = await assets.writeBatch(batchFeed, {
      folders: [at("f1/f2"), at("f3")],
      files: [
        { ...file("keep.txt", content("3")), mode: "create" },
        { ...file("swap.txt", content("4")), mode: "create-or-replace" },
        { ...file("f1/f2/new.txt", content("5")), mode: "create" },
        { ...file("f4/new.txt", content("6")), mode: "create" },
      ],
      now: T1,
      keepExisting: true,
    });
    expect(written).toEqual({ kept: 1, replaced: [content("2")] });
    const created = { createdAt: T1, modifiedAt: T1 };
    expect(await assets.list(batchFeed, "", true)).toEqual([
      folderItem("f1", created),
      folderItem("f1/f2", created),
      fileItem("f1/f2/new.txt", content("5"), created),
      folderItem("f3", created),
      folderItem("f4", created),
      fileItem("f4/new.txt", content("6"), created),
      fileItem("keep.txt", content("1")),
      fileItem("swap.txt", content("4"), { modifiedAt: T1 }),
    ]);
  });

  it("rolls a whole batch back on a refusal it does not keep", async () => {
    const batchFeed = await newFeed();
    await assets.writeFile(batchFeed, file("keep.txt", content("1")));
    const before = await assets.list(batchFeed, "", true);
    const batch = (keepExisting: boolean, last: FileWrite) => ({
      folders: [at("made")],
      files: [{ ...file("made/a.txt", content("2")), mode: "create" as const }, last],
      now: T1,
      keepExisting,
    });
    await expect(
      assets.writeBatch(batchFeed, batch(false, { ...file("keep.txt", content("3")), mode: "create" })),
    ).rejects.toEqual(refusal("invalid", "ASSET_EXISTS"));
    await expect(
      assets.writeBatch(batchFeed, batch(true, { ...file("keep.txt", content("3")), mayReplace: false })),
    ).rejects.toEqual(refusal("forbidden", "OVERWRITE_FORBIDDEN"));
    await expect(assets.writeBatch(batchFeed, batch(true, file("keep.txt/x", content("3"))))).rejects.toEqual(
      refusal("invalid", "PARENT_IS_FILE"),
    );
    await expect(
      assets.writeBatch(batchFeed, { folders: [at("keep.txt")], files: [], now: T1, keepExisting: true }),
    ).rejects.toEqual(refusal("invalid", "PARENT_IS_FILE"));
    expect(await assets.list(batchFeed, "", true)).toEqual(before);
    expect(await assets.writeBatch(batchFeed, { folders: [], files: [], now: T1, keepExisting: false })).toEqual({
      kept: 0,
      replaced: [],
    });
  });

  // PostgreSQL writes a batch in a few multi-row statements (batch-write-postgres.ts): each
  // decision must still see the items as the batch's earlier writes left them, as SQLite's do.
  it("decides each item of a batch on what the batch wrote before it, for thousands of files", async () => {
    const batchFeed = await newFeed();
    await assets.writeFile(batchFeed, file("old.txt", content("1")));
    const many = Array.from({ length: 1500 }, (_, i) => file(`many/d${i % 30}/f-${i}.bin`, content("7", i)));
    const written = await assets.writeBatch(batchFeed, {
      folders: [at("Made")],
      files: [
        { ...file("Twice.txt", content("2")), mode: "create", contentType: "text/plain" },
        file("twice.TXT", content("3")),
        { ...file("TWICE.txt", content("4")), mode: "create" },
        file("old.txt", content("5")),
        file("OLD.txt", content("6")),
        { ...file("made/sub/x.txt", content("8")), mode: "create" },
        ...many,
      ],
      now: T1,
      keepExisting: true,
    });
    // The second write of twice.txt replaces the first's content; the third, in create mode, keeps it.
    expect(written).toEqual({ kept: 1, replaced: [content("2"), content("1"), content("5")] });
    const created = { createdAt: T1, modifiedAt: T1 };
    expect(await assets.find(batchFeed, "twice.txt")).toEqual(fileItem("Twice.txt", content("3"), created));
    expect(await assets.find(batchFeed, "old.txt")).toEqual(fileItem("old.txt", content("6"), { modifiedAt: T1 }));
    expect(await assets.find(batchFeed, "made")).toEqual(folderItem("Made", created));
    expect(await assets.find(batchFeed, "made/sub")).toEqual(folderItem("made/sub", created));
    expect(await assets.find(batchFeed, "made/sub/x.txt")).toEqual(fileItem("made/sub/x.txt", content("8"), created));
    const listed = await assets.list(batchFeed, "many", true);
    expect(listed.filter((item) => item.isFolder)).toHaveLength(30);
    expect(listed.filter((item) => !item.isFolder)).toHaveLength(1500);
    expect(await assets.find(batchFeed, "many/d7/f-1237.bin")).toEqual(
      fileItem("many/d7/f-1237.bin", content("7", 1237), created),
    );
    await expect(
      assets.writeBatch(batchFeed, {
        folders: [at("late")],
        files: [file("late", content("9"))],
        now: T2,
        keepExisting: true,
      }),
    ).rejects.toEqual(refusal("invalid", "ASSET_IS_FOLDER"));
    expect(await assets.find(batchFeed, "late")).toBeUndefined();
  });

  it("deletes a file, an empty folder, and a folder with its contents only when recursive", async () => {
    const deleteFeed = await newFeed();
    await assets.writeFile(deleteFeed, file("top.txt", content("1")));
    await assets.writeFile(deleteFeed, file("Dir/b.txt", content("2")));
    await assets.writeFile(deleteFeed, file("Dir/A/z.txt", content("3")));
    await assets.writeFile(deleteFeed, file("Dir-sibling.txt", content("4")));
    await assets.writeFile(deleteFeed, file("Dir0.txt", content("5")));
    await assets.createFolder(deleteFeed, at("Dir/Empty"), T0);

    const options = { recursive: false, filesOnly: false };
    expect(await assets.delete(deleteFeed, at("missing"), options)).toEqual({ deleted: 0, contents: [] });
    expect(await assets.delete(deleteFeed, at("TOP.txt"), { recursive: false, filesOnly: true })).toEqual({
      deleted: 1,
      contents: [content("1")],
    });
    await expect(assets.delete(deleteFeed, at("dir"), { recursive: true, filesOnly: true })).rejects.toEqual(
      refusal("invalid", "ASSET_IS_FOLDER"),
    );
    await expect(assets.delete(deleteFeed, at("dir"), options)).rejects.toEqual(refusal("invalid", "FOLDER_NOT_EMPTY"));
    expect(await assets.delete(deleteFeed, at("dir/empty"), options)).toEqual({ deleted: 1, contents: [] });
    // The contents in path order: 'dir/a', 'dir/a/z.txt', 'dir/b.txt'.
    expect(await assets.delete(deleteFeed, at("dir"), { recursive: true, filesOnly: false })).toEqual({
      deleted: 4,
      contents: [content("3"), content("2")],
    });
    expect(await assets.list(deleteFeed, "", true)).toEqual([
      fileItem("Dir-sibling.txt", content("4")),
      fileItem("Dir0.txt", content("5")),
    ]);
    expect(await assets.delete(deleteFeed, at("dir"), options)).toEqual({ deleted: 0, contents: [] });
  });

  it("deletes a file told its expected blob only while the file has it", async () => {
    const feed = await newFeed();
    await assets.writeFile(feed, file("kept.txt", content("new bytes")));
    await assets.createFolder(feed, at("folder"), T0);
    const expecting = (sha256: string) => ({ recursive: false, filesOnly: true, expectedBlob: sha256 });
    const nothing = { deleted: 0, contents: [] };
    // Overwritten since it was looked at: kept, and no content goes back to collection.
    expect(await assets.delete(feed, at("kept.txt"), expecting(content("old bytes").sha256))).toEqual(nothing);
    expect(await assets.delete(feed, at("folder"), expecting(content("new bytes").sha256))).toEqual(nothing);
    expect((await assets.list(feed, "", true)).map((item) => item.path)).toEqual(["folder", "kept.txt"]);
    expect(await assets.delete(feed, at("kept.txt"), expecting(content("new bytes").sha256))).toEqual({
      deleted: 1,
      contents: [content("new bytes")],
    });
    expect(await assets.delete(feed, at("kept.txt"), expecting(content("new bytes").sha256))).toEqual(nothing);
  });

  it("updates metadata: given fields only, no type on folders, Inherit clears the cache setting", async () => {
    await assets.updateMetadata(feedId, "docs/guide/intro.pdf", {
      contentType: "application/pdf",
      userMetadata: { tag: { value: "x", header: true } },
      cacheHeader: { type: "Custom", value: "private" },
      now: T1,
    });
    await assets.updateMetadata(feedId, "docs/guide/intro.pdf", { now: T2 });
    expect(await assets.find(feedId, "docs/guide/intro.pdf")).toEqual(
      fileItem("Docs/Guide/Intro.PDF", content("1"), {
        contentType: "application/pdf",
        userMetadata: { tag: { value: "x", header: true } },
        cacheHeader: { type: "Custom", value: "private" },
        modifiedAt: T2,
      }),
    );
    await assets.updateMetadata(feedId, "docs/guide/intro.pdf", { cacheHeader: INHERIT, userMetadata: {}, now: T2 });
    expect(await assets.find(feedId, "docs/guide/intro.pdf")).toMatchObject({
      contentType: "application/pdf",
      userMetadata: {},
      cacheHeader: INHERIT,
    });
    await assets.updateMetadata(feedId, "docs", {
      contentType: "text/plain",
      cacheHeader: { type: "NoCache" },
      now: T1,
    });
    expect(await assets.find(feedId, "docs")).toEqual(
      folderItem("Docs", { cacheHeader: { type: "NoCache" }, modifiedAt: T1 }),
    );
    await expect(assets.updateMetadata(feedId, "docs/missing", { now: T1 })).rejects.toEqual(
      refusal("not_found", "ASSET_NOT_FOUND"),
    );
    await expect(assets.updateMetadata(otherFeedId, "docs/guide/intro.pdf", { now: T1 })).rejects.toEqual(
      refusal("not_found", "ASSET_NOT_FOUND"),
    );
  });

  it("loses a directory's items with the directory", async () => {
    const gone = await newFeed();
    await assets.writeFile(gone, file("a/b.txt", content("1")));
    await database().exec("DELETE FROM feeds WHERE id = ?", [gone]);
    expect(await assets.list(gone, "", true)).toEqual([]);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    await assets.writeFile(feedId, file("c/one.txt", content("1")));
    await assets.writeBatch(feedId, { folders: [at("c2")], files: [], now: T1, keepExisting: false });
    await assets.createFolder(feedId, at("c3"), T1);
    await assets.updateMetadata(feedId, "c3", { now: T2 });
    await assets.delete(feedId, at("c"), { recursive: true, filesOnly: false });
    await expect(assets.updateMetadata(feedId, "missing", { now: T2 })).rejects.toThrow();
    expect(db.commits()).toBe(before + 6);
  });

  describe("races between nodes (PostgreSQL)", () => {
    /** Repositories each on a pool of its own, as the nodes of a cluster; none on SQLite, whose writers take turns. */
    let nodes: AssetRepository[] = [];
    const otherNode = otherNodesForBlock(database);
    beforeAll(() => {
      if (database().kind !== "postgres") return;
      nodes = Array.from({ length: 6 }, () => createPostgresAssetRepository(otherNode()));
    });

    it("lets one of many concurrent creates of one file win; the others get ASSET_EXISTS", async () => {
      if (database().kind !== "postgres") return;
      const raceFeed = await newFeed();
      const results = await Promise.allSettled(
        nodes.map((node, i) =>
          node.writeFile(raceFeed, file("Race/Deep/File.txt", content(String(i)), { mode: "create" })),
        ),
      );
      const lost = results.flatMap((result) => (result.status === "rejected" ? [result.reason] : []));
      expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
      expect(lost).toEqual(Array.from({ length: nodes.length - 1 }, () => refusal("invalid", "ASSET_EXISTS")));
      expect((await assets.list(raceFeed, "", true)).map((item) => item.path)).toEqual([
        "Race",
        "Race/Deep",
        "Race/Deep/File.txt",
      ]);
    });

    it("stores concurrent files and folders below the same new folders, each folder once", async () => {
      if (database().kind !== "postgres") return;
      const raceFeed = await newFeed();
      await Promise.all(
        nodes.flatMap((node, i) => [
          node.writeFile(raceFeed, file(`x/y/${i}.txt`, content("1"))),
          node.writeBatch(raceFeed, {
            folders: [at("x/z")],
            files: [file(`x/y/b${i}.txt`, content("2"))],
            now: T1,
            keepExisting: false,
          }),
          node.createFolder(raceFeed, at(`x/y/d${i}`), T1),
        ]),
      );
      expect((await assets.list(raceFeed, "x", false)).map((item) => item.path)).toEqual(["x/y", "x/z"]);
      expect(await assets.list(raceFeed, "x/y", false)).toHaveLength(nodes.length * 3);
    });

    it("never leaves an item without its folder when recursive deletes meet writes into the folder", async () => {
      if (database().kind !== "postgres") return;
      const raceFeed = await newFeed();
      await assets.writeFile(raceFeed, file("dir/old.txt", content("1")));
      await Promise.all(
        nodes.map((node, i) =>
          i % 2 === 0
            ? node.delete(raceFeed, at("dir"), { recursive: true, filesOnly: false })
            : node.writeFile(raceFeed, file(`dir/sub${i}/new.txt`, content("2"))),
        ),
      );
      const orphans = await database().exec(
        `SELECT i.path FROM asset_items i WHERE i.feed_id = ? AND i.parent_key <> ''
            AND NOT EXISTS (SELECT 1 FROM asset_items p
                             WHERE p.feed_id = i.feed_id AND p.path_key = i.parent_key AND p.is_folder = 1)`,
        [raceFeed],
      );
      expect(orphans).toEqual([]);
    });
  });
});
