import { conflict } from "../../domain/errors.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import {
  CONNECTOR_DEFAULTS,
  type Connector,
  type ConnectorDraft,
  type ConnectorHealth,
  connectorNotFound,
} from "./model.js";

/**
 * SQL for `connectors` (migration 0007). Every method is one transaction and returns a Promise,
 * so that another database can implement the same interface.
 */
export interface ConnectorRepository {
  /** By name, case-insensitively. */
  findByName(name: string): Promise<Connector | undefined>;
  findById(id: number): Promise<Connector | undefined>;
  /** All connectors, ordered by name case-insensitively. */
  list(): Promise<Connector[]>;
  /** Health starts `unknown`. Throws conflict when the name is taken (case-insensitively). */
  insert(draft: ConnectorDraft, now: string): Promise<Connector>;
  /**
   * Reads the connector, applies `change` and writes the result, in one transaction (`change` may
   * throw to abort). When the upstream changes (url, type or credentials), health goes back to
   * `unknown` and cached metadata answers are dropped: both were about the old upstream.
   * Throws not_found for an unknown id, conflict for a name taken by another connector.
   */
  update(id: number, change: (current: Connector) => ConnectorDraft, now: string): Promise<Connector>;
  deleteById(id: number): Promise<boolean>;
  /**
   * Stores a check's result, only if the connector still has the upstream `checked` was taken from
   * (a check outlives its request; an update meanwhile makes the result meaningless). Returns the
   * connector as stored afterwards; undefined when it was deleted.
   */
  recordHealth(checked: Connector, health: ConnectorHealth): Promise<Connector | undefined>;
  /**
   * Replaces every stored password for which `reseal` returns a new text (nothing else changes:
   * it is the same password, sealed again); returns how many were replaced.
   */
  resealPasswords(reseal: (connector: string, stored: string) => string | undefined): Promise<number>;
}

export interface ConnectorRow {
  id: number;
  name: string;
  url: string;
  feed_type: string;
  settings: string;
  password: string | null;
  health_state: ConnectorHealth["state"];
  health_error: string | null;
  health_checked_at: string | null;
  created_at: string;
  modified_at: string;
}

/** The `settings` JSON column (migration 0007): everything except name, url, type, password. */
interface StoredSettings {
  timeout: number;
  metadataCacheEnabled: boolean;
  metadataCacheMinutes: number;
  metadataCacheCount: number;
  username?: string;
  filters: string[];
  mergeWithLocalPackages: boolean;
}

export const CONNECTOR_COLUMNS =
  "id, name, url, feed_type, settings, password, health_state, health_error, health_checked_at, created_at, modified_at";

export function createConnectorRepository(db: Db): ConnectorRepository {
  const byName = db.prepare<[string], ConnectorRow>(`SELECT ${CONNECTOR_COLUMNS} FROM connectors WHERE name_key = ?`);
  const byId = db.prepare<[number], ConnectorRow>(`SELECT ${CONNECTOR_COLUMNS} FROM connectors WHERE id = ?`);
  const all = db.prepare<[], ConnectorRow>(
    `SELECT ${CONNECTOR_COLUMNS} FROM connectors ORDER BY name COLLATE NOCASE, id`,
  );
  const nameOwner = db.prepare<[string], { id: number; name: string }>(
    "SELECT id, name FROM connectors WHERE name_key = ?",
  );
  const insertRow = db.prepare<[string, string, string, string, string, string | null, string, string], { id: number }>(
    `INSERT INTO connectors (name, name_key, url, feed_type, settings, password, created_at, modified_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  );
  const updateRow = db.prepare<[string, string, string, string, string, string | null, string, number]>(
    `UPDATE connectors SET name = ?, name_key = ?, url = ?, feed_type = ?, settings = ?, password = ?, modified_at = ?
     WHERE id = ?`,
  );
  const resetHealth = db.prepare<[number]>(
    "UPDATE connectors SET health_state = 'unknown', health_error = NULL, health_checked_at = NULL WHERE id = ?",
  );
  const dropMetadata = db.prepare<[number]>("DELETE FROM connector_metadata WHERE connector_id = ?");
  const deleteRow = db.prepare<[number]>("DELETE FROM connectors WHERE id = ?");
  const passwords = db.prepare<[], { id: number; name: string; password: string }>(
    "SELECT id, name, password FROM connectors WHERE password IS NOT NULL",
  );
  const setPassword = db.prepare<[string, number]>("UPDATE connectors SET password = ? WHERE id = ?");
  const setHealth = db.prepare<
    [string, string | null, string | null, number, string, string, string | null, string | null]
  >(
    `UPDATE connectors SET health_state = ?, health_error = ?, health_checked_at = ?
     WHERE id = ? AND url = ? AND feed_type = ? AND json_extract(settings, '$.username') IS ? AND password IS ?`,
  );

  function claimName(id: number | undefined, name: string): void {
    refuseTakenName(id, nameOwner.get(name.toLowerCase()));
  }

  const insertTx = db.transaction((draft: ConnectorDraft, now: string): Connector => {
    claimName(undefined, draft.name);
    const { id } = insertRow.get(
      draft.name,
      draft.name.toLowerCase(),
      draft.url,
      draft.feedType,
      encodeSettings(draft),
      draft.password ?? null,
      now,
      now,
    ) as { id: number };
    return toConnector(byId.get(id) as ConnectorRow);
  });

  const updateTx = db.transaction((id: number, change: (current: Connector) => ConnectorDraft, now: string) => {
    const row = byId.get(id);
    if (!row) throw connectorNotFound();
    const current = toConnector(row);
    const draft = change(current);
    claimName(id, draft.name);
    const settings = encodeSettings(draft);
    updateRow.run(
      draft.name,
      draft.name.toLowerCase(),
      draft.url,
      draft.feedType,
      settings,
      draft.password ?? null,
      now,
      id,
    );
    if (!sameUpstream(current, draft)) {
      resetHealth.run(id);
      dropMetadata.run(id);
    }
    return toConnector(byId.get(id) as ConnectorRow);
  });

  const recordTx = db.transaction((checked: Connector, health: ConnectorHealth): Connector | undefined => {
    setHealth.run(
      health.state,
      health.errorMessage ?? null,
      health.lastChecked ?? null,
      checked.id,
      checked.url,
      checked.feedType,
      checked.username ?? null,
      checked.password ?? null,
    );
    const row = byId.get(checked.id);
    return row && toConnector(row);
  });

  const resealTx = db.transaction((reseal: (connector: string, stored: string) => string | undefined): number => {
    let count = 0;
    for (const row of passwords.all()) {
      const sealed = reseal(row.name, row.password);
      if (sealed !== undefined && sealed !== row.password) count += setPassword.run(sealed, row.id).changes;
    }
    return count;
  });

  return withBusyRetries(db, {
    async findByName(name) {
      const row = byName.get(name.toLowerCase());
      return row && toConnector(row);
    },
    async findById(id) {
      const row = byId.get(id);
      return row && toConnector(row);
    },
    async list() {
      return all.all().map(toConnector);
    },
    async insert(draft, now) {
      return translateConstraint(() => insertTx.immediate(draft, now));
    },
    async update(id, change, now) {
      return translateConstraint(() => updateTx.immediate(id, change, now));
    },
    async deleteById(id) {
      return deleteRow.run(id).changes > 0;
    },
    async recordHealth(checked, health) {
      return recordTx.immediate(checked, health);
    },
    async resealPasswords(reseal) {
      return resealTx.immediate(reseal);
    },
  });
}

/** Throws CONNECTOR_NAME_TAKEN when `owner`, the connector with the name, is not connector `id` (both databases). */
export function refuseTakenName(id: number | undefined, owner: { id: number; name: string } | undefined): void {
  if (owner && owner.id !== id)
    throw conflict("CONNECTOR_NAME_TAKEN", `a connector named '${owner.name}' already exists`);
}

/** What a health check and the metadata cache depend on. */
export function sameUpstream(a: ConnectorDraft, b: ConnectorDraft): boolean {
  return a.url === b.url && a.feedType === b.feedType && a.username === b.username && a.password === b.password;
}

export function encodeSettings(draft: ConnectorDraft): string {
  const settings: StoredSettings = {
    timeout: draft.timeoutSeconds,
    metadataCacheEnabled: draft.metadataCacheEnabled,
    metadataCacheMinutes: draft.metadataCacheMinutes,
    metadataCacheCount: draft.metadataCacheCount,
    ...(draft.username === undefined ? {} : { username: draft.username }),
    filters: [...draft.filters],
    mergeWithLocalPackages: draft.mergeWithLocalPackages,
  };
  return JSON.stringify(settings);
}

/** Members a row written by an older Wharf lacks take their defaults, so new settings need no migration. */
const STORED_DEFAULTS: StoredSettings = {
  timeout: CONNECTOR_DEFAULTS.timeoutSeconds,
  metadataCacheEnabled: CONNECTOR_DEFAULTS.metadataCacheEnabled,
  metadataCacheMinutes: CONNECTOR_DEFAULTS.metadataCacheMinutes,
  metadataCacheCount: CONNECTOR_DEFAULTS.metadataCacheCount,
  filters: [],
  mergeWithLocalPackages: CONNECTOR_DEFAULTS.mergeWithLocalPackages,
};

export function toConnector(row: ConnectorRow): Connector {
  const settings: StoredSettings = { ...STORED_DEFAULTS, ...(JSON.parse(row.settings) as Partial<StoredSettings>) };
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    feedType: row.feed_type,
    timeoutSeconds: settings.timeout,
    metadataCacheEnabled: settings.metadataCacheEnabled,
    metadataCacheMinutes: settings.metadataCacheMinutes,
    metadataCacheCount: settings.metadataCacheCount,
    username: settings.username,
    password: row.password ?? undefined,
    filters: settings.filters,
    mergeWithLocalPackages: settings.mergeWithLocalPackages,
    health: {
      state: row.health_state,
      errorMessage: row.health_error ?? undefined,
      lastChecked: row.health_checked_at ?? undefined,
    },
    createdAt: row.created_at,
    modifiedAt: row.modified_at,
  };
}

/** claimName checks first; the unique name_key is the backstop if two writers still collide. */
function translateConstraint<T>(action: () => T): T {
  try {
    return action();
  } catch (error) {
    throw constraintFailure(error);
  }
}

/** What a unique violation means to the API: the name was taken meanwhile (both databases); other errors as they are. */
export function constraintFailure(error: unknown): unknown {
  if (isUniqueViolation(error)) {
    return conflict("CONNECTOR_NAME_TAKEN", "a connector with this name already exists", { cause: error });
  }
  return error;
}
