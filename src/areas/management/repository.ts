import { conflict, notFound } from "../../domain/errors.js";
import type { FeedType } from "../../domain/feeds.js";
import type { FeedScope } from "../../domain/principal.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { runDeletion } from "../../storage/space-reserve.js";
import { isConstraintViolation } from "../../storage/sqlite-errors.js";
import { createFeedConnectorRows } from "./feed-connectors.js";
import { decodeSettings, encodeSettings, type Feed, type FeedDraft } from "./feed-settings.js";

/**
 * SQL for `feeds`, `feed_names` and `feed_connectors` (migrations 0001, 0002, 0010, 0023). Every method
 * is one transaction and returns a Promise, so that another database can implement the same
 * interface. A feed's `settings.connectors` are stored as connector ids and read back as the
 * connectors' current names: a renamed connector stays the feed's, a deleted one leaves it.
 */
export interface FeedRepository {
  /** Id, canonical name and group of the feed with this primary or alternate name, case-insensitively. */
  findScope(name: string): Promise<FeedScope | undefined>;
  findByName(name: string): Promise<Feed | undefined>;
  /** All feeds, ordered by name case-insensitively. */
  list(): Promise<Feed[]>;
  /**
   * Throws conflict when a name (primary or alternate) is taken by another feed, unprocessable
   * CONNECTOR_NOT_FOUND when no connector has a name of `settings.connectors` (update too).
   */
  insert(draft: FeedDraft, storageKey: string, now: string): Promise<Feed>;
  /**
   * Reads the feed, applies `change` to it and writes the result, all in one transaction (so two
   * concurrent partial updates cannot lose each other's changes). `change` may throw to abort.
   */
  update(id: number, change: (current: Feed) => FeedDraft, now: string): Promise<Feed>;
  /** Deletes the feed with this name or alternate name, and its keys and permissions; false when there is none. */
  deleteByName(name: string): Promise<boolean>;
}

export interface FeedRow {
  id: number;
  name: string;
  feed_type: string;
  feed_group: string | null;
  storage_key: string;
  settings: string;
  created_at: string;
  modified_at: string;
}

export interface NameOwnerRow {
  feed_id: number;
  owner: string;
  is_primary: number;
}

export const FEED_COLUMNS =
  "f.id, f.name, f.feed_type, f.feed_group, f.storage_key, f.settings, f.created_at, f.modified_at";

export function createFeedRepository(db: Db): FeedRepository {
  const scopeByName = db.prepare<[string], { id: number; name: string; feed_group: string | null }>(
    "SELECT f.id, f.name, f.feed_group FROM feed_names n JOIN feeds f ON f.id = n.feed_id WHERE n.name_key = ?",
  );
  const feedByName = db.prepare<[string], FeedRow>(
    `SELECT ${FEED_COLUMNS} FROM feed_names n JOIN feeds f ON f.id = n.feed_id WHERE n.name_key = ?`,
  );
  const feedById = db.prepare<[number], FeedRow>(`SELECT ${FEED_COLUMNS} FROM feeds f WHERE f.id = ?`);
  const allFeeds = db.prepare<[], FeedRow>(`SELECT ${FEED_COLUMNS} FROM feeds f ORDER BY f.name COLLATE NOCASE, f.id`);
  const alternatesOf = db.prepare<[number], { name: string }>(
    "SELECT name FROM feed_names WHERE feed_id = ? AND is_primary = 0 ORDER BY position, rowid",
  );
  const allAlternates = db.prepare<[], { feed_id: number; name: string }>(
    "SELECT feed_id, name FROM feed_names WHERE is_primary = 0 ORDER BY feed_id, position, rowid",
  );
  const nameOwner = db.prepare<[string], NameOwnerRow>(
    `SELECT n.feed_id, f.name AS owner, n.is_primary
       FROM feed_names n JOIN feeds f ON f.id = n.feed_id WHERE n.name_key = ?`,
  );
  const insertFeed = db.prepare<[string, string, string | null, string, string, string, string], { id: number }>(
    `INSERT INTO feeds (name, feed_type, feed_group, storage_key, settings, created_at, modified_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  );
  const updateFeed = db.prepare<[string, string, string | null, string, string, number]>(
    "UPDATE feeds SET name = ?, feed_type = ?, feed_group = ?, settings = ?, modified_at = ? WHERE id = ?",
  );
  const deleteNames = db.prepare<[number]>("DELETE FROM feed_names WHERE feed_id = ?");
  const insertName = db.prepare<[string, number, number, string, number]>(
    "INSERT INTO feed_names (name_key, feed_id, is_primary, name, position) VALUES (?, ?, ?, ?, ?)",
  );
  const deleteFeed = db.prepare<[number]>("DELETE FROM feeds WHERE id = ?");
  const connectorRows = createFeedConnectorRows(db);

  const withAlternates = (row: FeedRow) =>
    toFeed(
      row,
      alternatesOf.all(row.id).map((r) => r.name),
      connectorRows.namesOf(row.id),
    );

  /**
   * Names are one namespace across feeds, primary and alternate alike (migration 0001); each is
   * stored with its place in the list, which the alternate names are read back in (0023).
   */
  function claimNames(feedId: number, draft: FeedDraft): void {
    const names = [draft.name, ...draft.alternateNames];
    for (const name of names) refuseTakenName(feedId, name, nameOwner.get(name.toLowerCase()));
    deleteNames.run(feedId);
    names.forEach((name, index) => {
      insertName.run(name.toLowerCase(), feedId, index === 0 ? 1 : 0, name, index);
    });
  }

  const insertTx = db.transaction((draft: FeedDraft, storageKey: string, now: string): Feed => {
    const { id } = insertFeed.get(
      draft.name,
      draft.feedType,
      draft.feedGroup ?? null,
      storageKey,
      encodeSettings(draft.settings),
      now,
      now,
    ) as { id: number };
    claimNames(id, draft);
    connectorRows.replace(id, draft.settings.connectors);
    return withAlternates(feedById.get(id) as FeedRow);
  });

  const updateTx = db.transaction((id: number, change: (current: Feed) => FeedDraft, now: string): Feed => {
    const row = feedById.get(id);
    if (!row) throw notFound("FEED_NOT_FOUND", "The specified feed was not found.");
    const current = withAlternates(row);
    const draft = change(current);
    updateFeed.run(draft.name, draft.feedType, draft.feedGroup ?? null, encodeSettings(draft.settings), now, id);
    claimNames(id, draft);
    if (!sameNames(current.settings.connectors, draft.settings.connectors)) {
      connectorRows.replace(id, draft.settings.connectors);
    }
    return withAlternates(feedById.get(id) as FeedRow);
  });

  const deleteTx = db.transaction((name: string): boolean => {
    const row = feedByName.get(name.toLowerCase());
    return row !== undefined && deleteFeed.run(row.id).changes > 0;
  });

  return withBusyRetries(db, {
    async findScope(name) {
      const row = scopeByName.get(name.toLowerCase());
      return row && { id: row.id, name: row.name, group: row.feed_group ?? undefined };
    },
    async findByName(name) {
      const row = feedByName.get(name.toLowerCase());
      return row && withAlternates(row);
    },
    async list() {
      const alternates = new Map<number, string[]>();
      for (const { feed_id, name } of allAlternates.all()) {
        alternates.set(feed_id, [...(alternates.get(feed_id) ?? []), name]);
      }
      const connectors = connectorRows.all();
      return allFeeds.all().map((row) => toFeed(row, alternates.get(row.id) ?? [], connectors.get(row.id) ?? []));
    },
    async insert(draft, storageKey, now) {
      return translateConstraint(() => insertTx.immediate(draft, storageKey, now));
    },
    async update(id, change, now) {
      return translateConstraint(() => updateTx.immediate(id, change, now));
    },
    async deleteByName(name) {
      return runDeletion(db, () => deleteTx.immediate(name));
    },
  });
}

/** A feed as the service sees it, from its row, alternate names and connector names (both databases). */
export const toFeed = (row: FeedRow, alternateNames: string[], connectors: string[]): Feed => ({
  id: row.id,
  name: row.name,
  alternateNames,
  feedType: row.feed_type as FeedType,
  ...(row.feed_group === null ? {} : { feedGroup: row.feed_group }),
  storageKey: row.storage_key,
  settings: { ...decodeSettings(row.settings), connectors },
  createdAt: row.created_at,
  modifiedAt: row.modified_at,
});

/** Throws FEED_NAME_TAKEN when `owner`, the row holding `name`, is another feed's (both databases). */
export function refuseTakenName(feedId: number, name: string, owner: NameOwnerRow | undefined): void {
  if (owner && owner.feed_id !== feedId) {
    throw owner.is_primary === 1
      ? conflict("FEED_NAME_TAKEN", `a feed named '${owner.owner}' already exists`)
      : conflict("FEED_NAME_TAKEN", `the name '${name}' is already an alternate name of feed '${owner.owner}'`);
  }
}

export const sameNames = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((name, i) => name.toLowerCase() === b[i]?.toLowerCase());

/** claimNames checks first; the primary key is the backstop if two writers still collide. */
function translateConstraint<T>(action: () => T): T {
  try {
    return action();
  } catch (error) {
    throw constraintFailure(error);
  }
}

/** What a constraint violation means to the API: a name taken meanwhile (both databases); other errors as they are. */
export function constraintFailure(error: unknown): unknown {
  if (isConstraintViolation(error)) {
    return conflict("FEED_NAME_TAKEN", "a feed with one of these names already exists", { cause: error });
  }
  return error;
}
