import type pg from "pg";
import { conflict } from "../../domain/errors.js";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import { type Connector, type ConnectorDraft, connectorNotFound } from "./model.js";
import {
  CONNECTOR_COLUMNS,
  type ConnectorRepository,
  type ConnectorRow,
  constraintFailure,
  encodeSettings,
  refuseTakenName,
  sameUpstream,
  toConnector,
} from "./repository.js";

type Queryable = pg.Pool | pg.PoolClient;

const BY_NAME = `SELECT ${CONNECTOR_COLUMNS} FROM connectors WHERE name_key = $1`;
const BY_ID = `SELECT ${CONNECTOR_COLUMNS} FROM connectors WHERE id = $1`;
// name is COLLATE "C": under it lower() folds ASCII letters only and the result sorts by code point,
// which is SQLite's NOCASE.
const ALL = `SELECT ${CONNECTOR_COLUMNS} FROM connectors ORDER BY lower(name), id`;
const NAME_OWNER = "SELECT id, name FROM connectors WHERE name_key = $1";
/** A name taken meanwhile by another writer is no error here: the caller says whose it is. */
const INSERT_ROW = `INSERT INTO connectors (name, name_key, url, feed_type, settings, password, created_at, modified_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name_key) DO NOTHING RETURNING id`;
/** The update's lock: two updates of one connector run one after the other, as on SQLite. FOR UPDATE: the name_key (a key) may change. */
const LOCK_ROW = `SELECT ${CONNECTOR_COLUMNS} FROM connectors WHERE id = $1 FOR UPDATE`;
const UPDATE_ROW = `UPDATE connectors SET name = $1, name_key = $2, url = $3, feed_type = $4, settings = $5, password = $6, modified_at = $7
     WHERE id = $8`;
const RESET_HEALTH =
  "UPDATE connectors SET health_state = 'unknown', health_error = NULL, health_checked_at = NULL WHERE id = $1";
// json_extract(settings, '$.username') IS ?: ->> gives a JSON string's text and NULL for a member
// that is absent or null, as json_extract does; IS becomes IS NOT DISTINCT FROM.
const SET_HEALTH = `UPDATE connectors SET health_state = $1, health_error = $2, health_checked_at = $3
     WHERE id = $4 AND url = $5 AND feed_type = $6 AND (settings::json ->> 'username') IS NOT DISTINCT FROM $7
       AND password IS NOT DISTINCT FROM $8`;
const PASSWORDS = "SELECT id, name, password FROM connectors WHERE password IS NOT NULL ORDER BY id";
/**
 * Conditional: a password changed by another writer since it was read (another node resealing at
 * its start, an update) is left as that writer made it, and not counted.
 */
const SET_PASSWORD = "UPDATE connectors SET password = $1 WHERE id = $2 AND password = $3";

async function connectorWhere(on: Queryable, sql: string, params: unknown[]) {
  const [row] = (await on.query<ConnectorRow>(sql, params)).rows;
  return row && toConnector(row);
}

/**
 * The conflict SQLite's check gives, for a name another writer took after this one's check: read
 * again once the statement that collided has failed (the other writer has committed by then).
 */
async function nameTakenMeanwhile(db: PostgresDb, id: number | undefined, name: string, cause: unknown) {
  const [owner] = await readRows<{ id: number; name: string }>(db, NAME_OWNER, [name.toLowerCase()]);
  refuseTakenName(id, owner);
  return constraintFailure(cause);
}

/** ConnectorRepository on PostgreSQL (cluster mode): the same connectors and answers as on SQLite. */
export function createPostgresConnectorRepository(db: PostgresDb): ConnectorRepository {
  return {
    findByName: async (name) => connectorWhere(db.pool, BY_NAME, [name.toLowerCase()]),
    findById: async (id) => connectorWhere(db.pool, BY_ID, [id]),
    async list() {
      return (await readRows<ConnectorRow>(db, ALL)).map(toConnector);
    },
    async insert(draft, now) {
      try {
        return await inTransaction(db, async (client) => {
          const [owner] = (await client.query<{ id: number; name: string }>(NAME_OWNER, [draft.name.toLowerCase()]))
            .rows;
          refuseTakenName(undefined, owner);
          const [row] = (
            await client.query<{ id: number }>(INSERT_ROW, [
              draft.name,
              draft.name.toLowerCase(),
              draft.url,
              draft.feedType,
              encodeSettings(draft),
              draft.password ?? null,
              now,
              now,
            ])
          ).rows;
          if (row === undefined) {
            // Taken since the check by a writer that has committed (ON CONFLICT waited for it).
            const [taker] = (await client.query<{ id: number; name: string }>(NAME_OWNER, [draft.name.toLowerCase()]))
              .rows;
            refuseTakenName(undefined, taker);
            // Taken and gone again: SQLite's unique-key backstop says this.
            throw conflict("CONNECTOR_NAME_TAKEN", "a connector with this name already exists");
          }
          return (await connectorWhere(client, BY_ID, [row.id])) as Connector;
        });
      } catch (error) {
        throw constraintFailure(error);
      }
    },
    async update(id, change, now) {
      let draft: ConnectorDraft | undefined;
      try {
        return await inTransaction(db, async (client) => {
          const [row] = (await client.query<ConnectorRow>(LOCK_ROW, [id])).rows;
          if (!row) throw connectorNotFound();
          const current = toConnector(row);
          draft = change(current);
          const [owner] = (await client.query<{ id: number; name: string }>(NAME_OWNER, [draft.name.toLowerCase()]))
            .rows;
          refuseTakenName(id, owner);
          await client.query(UPDATE_ROW, [
            draft.name,
            draft.name.toLowerCase(),
            draft.url,
            draft.feedType,
            encodeSettings(draft),
            draft.password ?? null,
            now,
            id,
          ]);
          if (!sameUpstream(current, draft)) {
            await client.query(RESET_HEALTH, [id]);
            await client.query("DELETE FROM connector_metadata WHERE connector_id = $1", [id]);
          }
          return (await connectorWhere(client, BY_ID, [id])) as Connector;
        });
      } catch (error) {
        // Another connector took the name after the check: the check's answer, now that it committed.
        if (isUniqueViolation(error) && draft !== undefined) throw await nameTakenMeanwhile(db, id, draft.name, error);
        throw constraintFailure(error);
      }
    },
    async deleteById(id) {
      // Its cached answers and feed bindings go with it (ON DELETE CASCADE, connectors_deleted).
      return ((await writeRows(db, "DELETE FROM connectors WHERE id = $1", [id])).rowCount ?? 0) > 0;
    },
    async recordHealth(checked, health) {
      return inTransaction(db, async (client) => {
        // One conditional statement: a check whose upstream changed meanwhile writes nothing.
        await client.query(SET_HEALTH, [
          health.state,
          health.errorMessage ?? null,
          health.lastChecked ?? null,
          checked.id,
          checked.url,
          checked.feedType,
          checked.username ?? null,
          checked.password ?? null,
        ]);
        return connectorWhere(client, BY_ID, [checked.id]);
      });
    },
    async resealPasswords(reseal) {
      return inTransaction(db, async (client) => {
        let count = 0;
        const rows = (await client.query<{ id: number; name: string; password: string }>(PASSWORDS)).rows;
        for (const row of rows) {
          const sealed = reseal(row.name, row.password);
          if (sealed !== undefined && sealed !== row.password) {
            count += (await client.query(SET_PASSWORD, [sealed, row.id, row.password])).rowCount ?? 0;
          }
        }
        return count;
      });
    },
  };
}
