import type pg from "pg";
import type { DesiredItem } from "../../drift/model.js";
import type { SecretBox } from "../../storage/secrets.js";
import { encodeItem } from "./item-codec.js";

/**
 * itemReplacer on PostgreSQL (cluster mode): replaces the stored items of one role or one server
 * (`owner`: the column naming it) with `items`, in their order, on the transaction's connection
 * that saves the owner. One INSERT for all the items; a duplicate (type, key) fails on the same
 * unique index as on SQLite.
 */
export async function replaceItemsOn(
  client: pg.PoolClient,
  owner: "role_id" | "server_id",
  ownerId: number,
  items: readonly DesiredItem[],
  secrets: SecretBox,
): Promise<void> {
  await client.query(`DELETE FROM config_items WHERE ${owner} = $1`, [ownerId]);
  if (items.length === 0) return;
  await client.query(
    `INSERT INTO config_items (${owner}, position, type, key, definition)
     SELECT $1::bigint, i.position - 1, i.type, i.key, i.definition
       FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS i(type, key, definition, position)
      ORDER BY i.position`,
    [
      ownerId,
      items.map((item) => item.type),
      items.map((item) => item.key),
      items.map((item) => encodeItem(item, secrets)),
    ],
  );
}
