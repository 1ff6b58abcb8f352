import { randomUUID } from "node:crypto";
import { conflict, notFound } from "../../domain/errors.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import type { ChangeScript, ChangeScriptDraft, ChangeScriptFilter } from "./change-script-model.js";
import type { Actor } from "./release-repository.js";

/**
 * SQL for database change scripts (migration 0012). Every method is one transaction and returns a
 * Promise. Reads of unknown ids find nothing; writes name what is missing.
 */
export interface ChangeScriptRepository {
  /** Newest release first (by sequence), each release's scripts in creation order (the order they run). */
  list(filter: ChangeScriptFilter): Promise<ChangeScript[]>;
  find(id: number): Promise<ChangeScript | undefined>;
  /**
   * Creates the script, or changes the one `scriptId` names (else the one of that name in the
   * release): name, text, release and `active` when given; modified by/on, never created by/on.
   * Throws not_found for an unknown application, release or script id, conflict for a name taken.
   */
  save(draft: ChangeScriptDraft, actor: Actor): Promise<ChangeScript>;
  /** False when there was no such script. */
  delete(id: number): Promise<boolean>;
}

export interface ChangeScriptRow {
  id: number;
  application_id: number;
  application_name: string;
  release_id: number;
  release_number: string;
  release_name: string;
  name: string;
  script_text: string;
  active: number;
  guid: string;
  created_by: string;
  created_on: string;
  modified_by: string;
  modified_on: string;
}

/** The shared pieces below are the same on both databases (change-script-repository-postgres.ts). */

export const CHANGE_SCRIPT_SELECT = `SELECT s.*, r.application_id, a.name AS application_name, r.number AS release_number,
  r.name AS release_name
  FROM change_scripts s JOIN releases r ON r.id = s.release_id JOIN applications a ON a.id = r.application_id`;

/** Newest release first (by sequence), each release's scripts in creation order. */
export const CHANGE_SCRIPT_ORDER = "ORDER BY r.sequence DESC, r.id DESC, s.id";

export const key = (name: string) => name.toLowerCase();

export const applicationNotFound = (draft: ChangeScriptDraft) =>
  notFound("APPLICATION_NOT_FOUND", `No application has the id ${draft.applicationId}.`);

export const releaseNotFound = (draft: ChangeScriptDraft) =>
  notFound("RELEASE_NOT_FOUND", `The application ${draft.applicationId} has no release '${draft.releaseNumber}'.`);

export const scriptNotFound = (draft: ChangeScriptDraft) =>
  notFound(
    "CHANGE_SCRIPT_NOT_FOUND",
    `The application ${draft.applicationId} has no change script with the id ${draft.scriptId}.`,
  );

export const scriptExists = (draft: ChangeScriptDraft, cause: unknown) =>
  conflict(
    "CHANGE_SCRIPT_EXISTS",
    `The release '${draft.releaseNumber}' already has a change script named '${draft.name}'.`,
    { cause },
  );

export function toChangeScript(row: ChangeScriptRow): ChangeScript {
  return {
    id: row.id,
    applicationId: row.application_id,
    applicationName: row.application_name,
    releaseId: row.release_id,
    releaseNumber: row.release_number,
    releaseName: row.release_name,
    name: row.name,
    text: row.script_text,
    active: row.active === 1,
    guid: row.guid,
    createdBy: row.created_by,
    createdOn: row.created_on,
    modifiedBy: row.modified_by,
    modifiedOn: row.modified_on,
  };
}

export function createChangeScriptRepository(db: Db): ChangeScriptRepository {
  const statements = {
    byApplication: db.prepare<[number, number, number], ChangeScriptRow>(
      `${CHANGE_SCRIPT_SELECT} WHERE r.application_id = ? AND (s.active = 1 OR ?) ${CHANGE_SCRIPT_ORDER} LIMIT ?`,
    ),
    byRelease: db.prepare<[number, string, number, number], ChangeScriptRow>(
      `${CHANGE_SCRIPT_SELECT} WHERE r.application_id = ? AND r.number_key = ? AND (s.active = 1 OR ?) ${CHANGE_SCRIPT_ORDER} LIMIT ?`,
    ),
    byId: db.prepare<[number], ChangeScriptRow>(`${CHANGE_SCRIPT_SELECT} WHERE s.id = ?`),
    application: db.prepare<[number], { id: number }>("SELECT id FROM applications WHERE id = ?"),
    release: db.prepare<[number, string], { id: number }>(
      "SELECT id FROM releases WHERE application_id = ? AND number_key = ?",
    ),
    scriptOfApplication: db.prepare<[number, number], { id: number; active: number }>(
      `SELECT s.id, s.active FROM change_scripts s JOIN releases r ON r.id = s.release_id
       WHERE s.id = ? AND r.application_id = ?`,
    ),
    scriptByName: db.prepare<[number, string], { id: number; active: number }>(
      "SELECT id, active FROM change_scripts WHERE release_id = ? AND name_key = ?",
    ),
    insert: db.prepare(
      `INSERT INTO change_scripts (release_id, name, name_key, script_text, active, guid, created_by, created_on,
         modified_by, modified_on)
       VALUES (@releaseId, @name, @nameKey, @text, @active, @guid, @by, @now, @by, @now)`,
    ),
    update: db.prepare(
      `UPDATE change_scripts SET release_id = @releaseId, name = @name, name_key = @nameKey, script_text = @text,
         active = @active, modified_by = @by, modified_on = @now WHERE id = @id`,
    ),
    delete: db.prepare<[number]>("DELETE FROM change_scripts WHERE id = ?"),
  };

  const existing = (draft: ChangeScriptDraft, releaseId: number) => {
    if (draft.scriptId === undefined) return statements.scriptByName.get(releaseId, key(draft.name));
    const found = statements.scriptOfApplication.get(draft.scriptId, draft.applicationId);
    if (!found) throw scriptNotFound(draft);
    return found;
  };

  const save = db.transaction((draft: ChangeScriptDraft, actor: Actor): ChangeScriptRow => {
    if (!statements.application.get(draft.applicationId)) throw applicationNotFound(draft);
    const release = statements.release.get(draft.applicationId, key(draft.releaseNumber));
    if (!release) throw releaseNotFound(draft);
    const params = { releaseId: release.id, name: draft.name, nameKey: key(draft.name), text: draft.text, ...actor };
    const found = existing(draft, release.id);
    let id: number;
    if (found) {
      const active = draft.active === undefined ? found.active : Number(draft.active);
      statements.update.run({ ...params, active, id: found.id });
      id = found.id;
    } else {
      const active = Number(draft.active ?? true);
      id = Number(statements.insert.run({ ...params, active, guid: randomUUID() }).lastInsertRowid);
    }
    return statements.byId.get(id) as ChangeScriptRow;
  });

  return withBusyRetries(db, {
    list: async (filter) => {
      const inactive = filter.includeInactive ? 1 : 0;
      // SQLite reads LIMIT -1 as "no limit".
      const limit = filter.limit ?? -1;
      const rows =
        filter.releaseNumber === undefined
          ? statements.byApplication.all(filter.applicationId, inactive, limit)
          : statements.byRelease.all(filter.applicationId, key(filter.releaseNumber), inactive, limit);
      return rows.map(toChangeScript);
    },
    find: async (id) => {
      const row = statements.byId.get(id);
      return row && toChangeScript(row);
    },
    save: async (draft, actor) => {
      try {
        return toChangeScript(save.immediate(draft, actor));
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        throw scriptExists(draft, error);
      }
    },
    delete: async (id) => statements.delete.run(id).changes > 0,
  });
}
