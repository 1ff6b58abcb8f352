import { presentMove } from "../areas/management/storage-move-routes.js";
import type { Config } from "../config.js";
import { systemClock } from "../domain/clock.js";
import type { MoveApi } from "./storage-http.js";

/**
 * `wharf storage` on the data directory itself, when no server runs there (the caller holds the
 * directory's lock, so none starts meanwhile): the same feed service and mover as the server's,
 * with the move running in this process. `--retry` resumes a move a stopped server left
 * unfinished (its row keeps its place if this command ends first).
 */
export async function localMoveApi(config: Config, feedName: string): Promise<MoveApi> {
  const { assertWritableDataDir } = await import("../storage/data-dir-access.js");
  const { dataPaths } = await import("../storage/data-paths.js");
  const { openDatabase } = await import("../storage/database.js");
  const { blobStoresOf } = await import("../storage/blob-stores.js");
  const { createFeedService } = await import("../areas/management/index.js");
  const { loadSecretKeys } = await import("../storage/secret-keys.js");
  const { createFeedStoreMoves } = await import("../storage/feed-store-move.js");
  assertWritableDataDir(config.dataDir);
  const db = openDatabase(dataPaths(config.dataDir).database);
  try {
    const stores = await blobStoresOf(db, config, systemClock);
    const feeds = createFeedService({ db, clock: systemClock, config, secrets: loadSecretKeys(config).box });
    const moves = createFeedStoreMoves({ db, stores, clock: systemClock });
    const feed = await feeds.getFeed(feedName);
    const { auditLocalCommand } = await import("../areas/audit/cli-record.js");
    // A move or retry changes the feed's rows: recorded once the command ends (areas/audit/).
    const audited = auditLocalCommand(db, systemClock, "storage", ["move", feed.name]);
    return {
      async setStorage(storage, move) {
        const changed = await moves.changeStore(feed.id, move, () => feeds.setStorage(feed.name, storage));
        return changed.move !== undefined;
      },
      async retry() {
        const state = (await moves.find(feed.id))?.state;
        // Left unfinished by a server that stopped: it goes on here.
        if (state === "copying" || state === "deleting") await moves.resumeUnfinished(feed.id);
        else await moves.retry(feed.id);
      },
      async state() {
        const row = await moves.find(feed.id);
        return row === undefined ? undefined : presentMove(feed.name, row);
      },
      async close() {
        await moves.stop();
        await audited(0);
        db.close();
      },
    };
  } catch (error) {
    db.close();
    throw error;
  }
}
