import { randomBytes } from "node:crypto";
import { type TestApp, writeFromOutside } from "./app.js";

/**
 * Stores a feed as an older Wharf did, past today's checks: with a type Wharf no longer creates
 * (nuget, npm, ...) or settings it now refuses (`settings` is the stored JSON, decoded with the
 * defaults filling what it lacks). Written as another process would (writeFromOutside).
 */
export async function insertLegacyFeed(
  t: TestApp,
  name: string,
  feedType: string,
  settings: Record<string, unknown> = {},
): Promise<void> {
  const now = new Date().toISOString();
  await writeFromOutside(
    t,
    `INSERT INTO feeds (name, feed_type, feed_group, storage_key, settings, created_at, modified_at)
     VALUES (?, ?, NULL, ?, ?, ?, ?)`,
    name,
    feedType,
    randomBytes(16).toString("hex"),
    JSON.stringify(settings),
    now,
    now,
  );
  await writeFromOutside(
    t,
    "INSERT INTO feed_names (name_key, feed_id, is_primary, name) SELECT ?, id, 1, name FROM feeds WHERE name = ?",
    name.toLowerCase(),
    name,
  );
}
