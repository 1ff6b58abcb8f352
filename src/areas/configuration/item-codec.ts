import type { DesiredItem } from "../../drift/model.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";

/**
 * How a desired item is kept in `config_items.definition` (migration 0011): the validated item as
 * JSON, except that a sensitive item's properties (a file's content, template, a config key's
 * value) are sealed with the data directory's secret key, so that a copy of the database does not
 * show them. Only the server ever opens them, to run or ship the item.
 */
const PURPOSE = "config-item";

interface StoredItem {
  readonly type: DesiredItem["type"];
  readonly key: string;
  readonly role: string | null;
  readonly sensitive: boolean;
  readonly properties?: Record<string, unknown>;
  /** Sensitive items: the properties, sealed. */
  readonly sealed?: string;
}

export function encodeItem(item: DesiredItem, secrets: SecretBox): string {
  const { properties, ...head } = item;
  const stored: StoredItem = item.sensitive
    ? { ...head, sealed: secrets.seal(JSON.stringify(properties), PURPOSE) }
    : { ...head, properties: { ...properties } };
  return JSON.stringify(stored);
}

/** The item as validated; `role` is the role's current name (it may have been renamed since). */
export function decodeItem(definition: string, role: string | null, secrets: SecretBox): DesiredItem {
  const stored = JSON.parse(definition) as StoredItem;
  const properties =
    stored.sealed !== undefined
      ? (JSON.parse(secrets.open(stored.sealed, PURPOSE)) as Record<string, unknown>)
      : (stored.properties ?? {});
  return { type: stored.type, key: stored.key, role, sensitive: stored.sensitive, properties };
}

/**
 * Replaces the stored items of one role or one server (`owner`: the column naming it) with
 * `items`, in their order; to be called inside the transaction that saves the owner.
 */
export function itemReplacer(
  db: Db,
  owner: "role_id" | "server_id",
  secrets: SecretBox,
): (ownerId: number, items: readonly DesiredItem[]) => void {
  const clear = db.prepare<[number]>(`DELETE FROM config_items WHERE ${owner} = ?`);
  const add = db.prepare<[number, number, string, string, string]>(
    `INSERT INTO config_items (${owner}, position, type, key, definition) VALUES (?, ?, ?, ?, ?)`,
  );
  return (ownerId, items) => {
    clear.run(ownerId);
    items.forEach((item, position) => add.run(ownerId, position, item.type, item.key, encodeItem(item, secrets)));
  };
}
