import { randomUUID } from "node:crypto";
import type pg from "pg";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import {
  applicationNotFound,
  CHANGE_SCRIPT_ORDER,
  CHANGE_SCRIPT_SELECT,
  type ChangeScriptRepository,
  type ChangeScriptRow,
  key,
  releaseNotFound,
  scriptExists,
  scriptNotFound,
  toChangeScript,
} from "./change-script-repository.js";

/**
 * ChangeScriptRepository on PostgreSQL (cluster mode): the same rows, order and errors as on
 * SQLite, where `save` runs under the database's one write lock (BEGIN IMMEDIATE). Here `save`
 * locks the release it writes into (FOR NO KEY UPDATE), so that saves into one release run one
 * after the other: a second create of the same name finds the first and changes it, as on SQLite,
 * instead of failing on the unique key; a rename or move onto a name taken meanwhile still ends in
 * CHANGE_SCRIPT_EXISTS. The script it changes is locked too (FOR UPDATE): `active`, kept when the
 * draft gives none, is read from the row's latest version.
 */
export function createPostgresChangeScriptRepository(db: PostgresDb): ChangeScriptRepository {
  return {
    list: async (filter) => {
      const inactive = filter.includeInactive ? 1 : 0;
      // SQLite reads LIMIT -1 as "no limit"; PostgreSQL reads NULL so (and refuses a negative one).
      const limit = filter.limit === undefined || filter.limit < 0 ? null : filter.limit;
      const rows =
        filter.releaseNumber === undefined
          ? await readRows<ChangeScriptRow>(
              db,
              `${CHANGE_SCRIPT_SELECT} WHERE r.application_id = $1 AND (s.active = 1 OR $2 = 1) ${CHANGE_SCRIPT_ORDER} LIMIT $3`,
              [filter.applicationId, inactive, limit],
            )
          : await readRows<ChangeScriptRow>(
              db,
              `${CHANGE_SCRIPT_SELECT} WHERE r.application_id = $1 AND r.number_key = $2 AND (s.active = 1 OR $3 = 1) ${CHANGE_SCRIPT_ORDER} LIMIT $4`,
              [filter.applicationId, key(filter.releaseNumber), inactive, limit],
            );
      return rows.map(toChangeScript);
    },
    find: async (id) => {
      const [row] = await readRows<ChangeScriptRow>(db, `${CHANGE_SCRIPT_SELECT} WHERE s.id = $1`, [id]);
      return row && toChangeScript(row);
    },
    save: async (draft, actor) => {
      try {
        return await inTransaction(db, async (client) => {
          const one = async <R extends pg.QueryResultRow>(sql: string, params: unknown[]) =>
            (await client.query<R>(sql, params)).rows[0];
          if (!(await one("SELECT id FROM applications WHERE id = $1", [draft.applicationId]))) {
            throw applicationNotFound(draft);
          }
          const release = await one<{ id: number }>(
            "SELECT id FROM releases WHERE application_id = $1 AND number_key = $2 FOR NO KEY UPDATE",
            [draft.applicationId, key(draft.releaseNumber)],
          );
          if (!release) throw releaseNotFound(draft);
          let found: { id: number; active: number } | undefined;
          if (draft.scriptId === undefined) {
            found = await one<{ id: number; active: number }>(
              "SELECT id, active FROM change_scripts WHERE release_id = $1 AND name_key = $2 FOR UPDATE",
              [release.id, key(draft.name)],
            );
          } else {
            // Locked alone, then checked: a FOR UPDATE through a join would miss the script when a
            // concurrent move (waited for) changed its release, as READ COMMITTED rechecks only
            // the locked row. A release never changes application.
            const locked = await one<{ id: number; active: number; release_id: number }>(
              "SELECT id, active, release_id FROM change_scripts WHERE id = $1 FOR UPDATE",
              [draft.scriptId],
            );
            const ofApplication =
              locked &&
              (await one("SELECT id FROM releases WHERE id = $1 AND application_id = $2", [
                locked.release_id,
                draft.applicationId,
              ]));
            if (!locked || !ofApplication) throw scriptNotFound(draft);
            found = locked;
          }
          const values = [release.id, draft.name, key(draft.name), draft.text];
          let id: number;
          if (found) {
            const active = draft.active === undefined ? found.active : Number(draft.active);
            await client.query(
              `UPDATE change_scripts SET release_id = $1, name = $2, name_key = $3, script_text = $4,
                 active = $5, modified_by = $6, modified_on = $7 WHERE id = $8`,
              [...values, active, actor.by, actor.now, found.id],
            );
            id = found.id;
          } else {
            const active = Number(draft.active ?? true);
            const inserted = await one<{ id: number }>(
              `INSERT INTO change_scripts (release_id, name, name_key, script_text, active, guid, created_by, created_on,
                 modified_by, modified_on)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $7, $8) RETURNING id`,
              [...values, active, randomUUID(), actor.by, actor.now],
            );
            id = (inserted as { id: number }).id;
          }
          return toChangeScript(
            (await one<ChangeScriptRow>(`${CHANGE_SCRIPT_SELECT} WHERE s.id = $1`, [id])) as ChangeScriptRow,
          );
        });
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        throw scriptExists(draft, error);
      }
    },
    delete: async (id) => ((await writeRows(db, "DELETE FROM change_scripts WHERE id = $1", [id])).rowCount ?? 0) > 0,
  };
}
