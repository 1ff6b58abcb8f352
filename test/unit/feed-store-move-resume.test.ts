import { expect, it } from "vitest";
import { systemClock } from "../../src/domain/clock.js";
import type { BlobStores } from "../../src/storage/blob-stores.js";
import { openDatabase } from "../../src/storage/database.js";
import { createFeedStoreMoves } from "../../src/storage/feed-store-move.js";

/**
 * The leader's look for moves to take over (resumeOrphaned): a database that fails meanwhile (a
 * node taking the lead as PostgreSQL restarts) is logged, never an unhandled rejection, and the
 * next look tries again; the returned stop ends the looks.
 */
it("logs a failed look for moves to resume, looks again, and stops when asked", async () => {
  const db = openDatabase(":memory:");
  const warnings: string[] = [];
  const moves = createFeedStoreMoves({
    db,
    // Never reached: the look fails before any move starts.
    stores: {} as BlobStores,
    clock: systemClock,
    log: { warn: (_fields, message) => void warnings.push(message) },
  });
  db.close();

  const stop = moves.resumeOrphaned(20);
  await expect.poll(() => warnings.length, { timeout: 2000 }).toBeGreaterThanOrEqual(3);
  expect(new Set(warnings)).toEqual(new Set(["resuming feed store moves failed"]));
  stop();
  const seen = warnings.length;
  await new Promise((resolve) => setTimeout(resolve, 100));
  // At most the look in flight when stop() was called ends after it.
  expect(warnings.length).toBeLessThanOrEqual(seen + 1);
});
