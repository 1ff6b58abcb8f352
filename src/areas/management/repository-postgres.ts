import type pg from "pg";
import { conflict, notFound } from "../../domain/errors.js";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { connectorNotFound } from "./feed-connectors.js";
import { encodeSettings, type Feed, type FeedDraft } from "./feed-settings.js";
import {
  constraintFailure,
  FEED_COLUMNS,
  type FeedRepository,
  type FeedRow,
  type NameOwnerRow,
  refuseTakenName,
  sameNames,
  toFeed,
} from "./repository.js";

type Queryable = pg.Pool | pg.PoolClient;

interface FeedRowWithNames extends FeedRow {
  alternate_names: string[];
  connector_names: string[];
}

/**
 * A feed with its alternate names and connector names in one statement, so that the three are read
 * from one snapshot (SQLite reads them with three statements no writer can come between). The
 * alternate names come in the order they were given (feed_names.position, migrations/postgres/0006).
 */
const FEED_SELECT = `SELECT ${FEED_COLUMNS},
       coalesce((SELECT json_agg(n.name ORDER BY n.position, n.name_key) FROM feed_names n
                  WHERE n.feed_id = f.id AND n.is_primary = 0), '[]') AS alternate_names,
       coalesce((SELECT json_agg(c.name ORDER BY fc.position)
                   FROM feed_connectors fc JOIN connectors c ON c.id = fc.connector_id
                  WHERE fc.feed_id = f.id), '[]') AS connector_names
  FROM feeds f`;
// Columns are COLLATE "C": under it lower() folds ASCII letters only and the result sorts by code
// point, which is SQLite's NOCASE.
const ALL_FEEDS = `${FEED_SELECT} ORDER BY lower(f.name), f.id`;
const FEED_BY_ID = `${FEED_SELECT} WHERE f.id = $1`;
const FEED_BY_NAME = `${FEED_SELECT} WHERE f.id = (SELECT n.feed_id FROM feed_names n WHERE n.name_key = $1)`;
const SCOPE_BY_NAME =
  "SELECT f.id, f.name, f.feed_group FROM feed_names n JOIN feeds f ON f.id = n.feed_id WHERE n.name_key = $1";
/** The update's lock: two updates of one feed run one after the other, as on SQLite (NO KEY: inserts referencing the feed go on). */
const LOCK_FEED = "SELECT 1 FROM feeds WHERE id = $1 FOR NO KEY UPDATE";
const NAME_OWNERS = `SELECT n.name_key, n.feed_id, f.name AS owner, n.is_primary
       FROM feed_names n JOIN feeds f ON f.id = n.feed_id WHERE n.name_key = ANY($1::text[])`;
/**
 * All of a feed's names in one statement, in name_key order: two claims of overlapping names take
 * the keys' locks in the same order and so wait for each other instead of deadlocking. Each keeps
 * its place in the list given as its position. A name taken meanwhile by another writer is
 * skipped, not an error, so that the caller can say whose it is.
 */
const INSERT_NAMES = `INSERT INTO feed_names (name_key, feed_id, is_primary, name, position)
     SELECT n.name_key, $1, n.is_primary, n.name, n.position - 1
       FROM unnest($2::text[], $3::integer[], $4::text[]) WITH ORDINALITY AS n(name_key, is_primary, name, position)
      ORDER BY n.name_key COLLATE "C"
     ON CONFLICT (name_key) DO NOTHING`;
/**
 * KEY SHARE: a connector cannot be deleted or renamed between this read and the feed_connectors
 * rows that refer to it; taken before those rows are touched, so that the connector's deletion
 * (which deletes them too) waits for us, or we for it, never both.
 */
const CONNECTOR_IDS = "SELECT id, name_key FROM connectors WHERE name_key = ANY($1::text[]) ORDER BY id FOR KEY SHARE";
const INSERT_CONNECTORS = `INSERT INTO feed_connectors (feed_id, position, connector_id)
     SELECT $1, c.position - 1, c.id FROM unnest($2::bigint[]) WITH ORDINALITY AS c(id, position)`;

const feedOf = (row: FeedRowWithNames) => toFeed(row, row.alternate_names, row.connector_names);

async function feedById(on: Queryable, id: number): Promise<Feed> {
  const [row] = (await on.query<FeedRowWithNames>(FEED_BY_ID, [id])).rows;
  return feedOf(row as FeedRowWithNames);
}

/** Names are one namespace across feeds, primary and alternate alike (as claimNames on SQLite). */
async function claimNames(client: pg.PoolClient, feedId: number, draft: FeedDraft): Promise<void> {
  const names = [draft.name, ...draft.alternateNames];
  const keys = names.map((name) => name.toLowerCase());
  const refuseTaken = async () => {
    const owners = new Map(
      (await client.query<NameOwnerRow & { name_key: string }>(NAME_OWNERS, [keys])).rows.map((row) => [
        row.name_key,
        row,
      ]),
    );
    names.forEach((name, i) => refuseTakenName(feedId, name, owners.get(keys[i] as string)));
  };
  await refuseTaken();
  await client.query("DELETE FROM feed_names WHERE feed_id = $1", [feedId]);
  const primary = names.map((_, index) => (index === 0 ? 1 : 0));
  const inserted = await client.query(INSERT_NAMES, [feedId, keys, primary, names]);
  if ((inserted.rowCount ?? 0) < names.length) {
    // Another feed took a name since the check (this statement saw it commit): the same answer as the check's.
    await refuseTaken();
    // A name given twice, or the taker gone again: SQLite's primary key backstop says this.
    throw conflict("FEED_NAME_TAKEN", "a feed with one of these names already exists");
  }
}

/** Replaces the feed's connectors (as FeedConnectorRows.replace on SQLite). */
async function replaceConnectors(client: pg.PoolClient, feedId: number, names: readonly string[]): Promise<void> {
  const keys = names.map((name) => name.toLowerCase());
  const found = await client.query<{ id: number; name_key: string }>(CONNECTOR_IDS, [keys]);
  const idOf = new Map(found.rows.map((row) => [row.name_key, row.id]));
  const ids = names.map((name, i) => {
    const id = idOf.get(keys[i] as string);
    // The feed service checked first; this is the backstop for a connector deleted meanwhile.
    if (id === undefined) throw connectorNotFound(name);
    return id;
  });
  await client.query("DELETE FROM feed_connectors WHERE feed_id = $1", [feedId]);
  if (ids.length > 0) await client.query(INSERT_CONNECTORS, [feedId, ids]);
}

/** FeedRepository on PostgreSQL (cluster mode): the same feeds and answers as on SQLite. */
export function createPostgresFeedRepository(db: PostgresDb): FeedRepository {
  return {
    async findScope(name) {
      const [row] = await readRows<{ id: number; name: string; feed_group: string | null }>(db, SCOPE_BY_NAME, [
        name.toLowerCase(),
      ]);
      return row && { id: row.id, name: row.name, group: row.feed_group ?? undefined };
    },
    async findByName(name) {
      const [row] = await readRows<FeedRowWithNames>(db, FEED_BY_NAME, [name.toLowerCase()]);
      return row && feedOf(row);
    },
    async list() {
      return (await readRows<FeedRowWithNames>(db, ALL_FEEDS)).map(feedOf);
    },
    async insert(draft, storageKey, now) {
      try {
        return await inTransaction(db, async (client) => {
          const [row] = (
            await client.query<{ id: number }>(
              `INSERT INTO feeds (name, feed_type, feed_group, storage_key, settings, created_at, modified_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
              [
                draft.name,
                draft.feedType,
                draft.feedGroup ?? null,
                storageKey,
                encodeSettings(draft.settings),
                now,
                now,
              ],
            )
          ).rows;
          const id = (row as { id: number }).id;
          await claimNames(client, id, draft);
          await replaceConnectors(client, id, draft.settings.connectors);
          return feedById(client, id);
        });
      } catch (error) {
        throw constraintFailure(error);
      }
    },
    async update(id, change, now) {
      try {
        return await inTransaction(db, async (client) => {
          if ((await client.query(LOCK_FEED, [id])).rowCount === 0) {
            throw notFound("FEED_NOT_FOUND", "The specified feed was not found.");
          }
          // Read after the lock, by a statement of its own: it sees what an update we waited for wrote.
          const current = await feedById(client, id);
          const draft = change(current);
          await client.query(
            "UPDATE feeds SET name = $1, feed_type = $2, feed_group = $3, settings = $4, modified_at = $5 WHERE id = $6",
            [draft.name, draft.feedType, draft.feedGroup ?? null, encodeSettings(draft.settings), now, id],
          );
          await claimNames(client, id, draft);
          if (!sameNames(current.settings.connectors, draft.settings.connectors)) {
            await replaceConnectors(client, id, draft.settings.connectors);
          }
          return feedById(client, id);
        });
      } catch (error) {
        throw constraintFailure(error);
      }
    },
    async deleteByName(name) {
      // One statement: the lookup and the deletion see the same feed. Its names, keys, permissions
      // and connector rows go with it (ON DELETE CASCADE and feeds_deleted).
      const deleted = await writeRows(
        db,
        "DELETE FROM feeds WHERE id = (SELECT n.feed_id FROM feed_names n WHERE n.name_key = $1)",
        [name.toLowerCase()],
      );
      return (deleted.rowCount ?? 0) > 0;
    },
  };
}
