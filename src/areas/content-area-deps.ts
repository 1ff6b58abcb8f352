import type { Config } from "../config.js";
import type { Clock } from "../domain/clock.js";
import type { FeedKeepers } from "../storage/blob-keeper.js";
import type { BlobStore } from "../storage/blob-store.js";
import type { MetadataDb } from "../storage/metadata-db.js";
import type { FeedService } from "./management/index.js";

/** What an area that stores content (universal feeds, asset directories) is built from; app.ts builds it once. */
export interface ContentAreaDeps {
  /** The metadata store: the data directory's SQLite or a cluster's PostgreSQL (repositories picked by `byDatabase`). */
  readonly db: MetadataDb;
  /** Reads any stored blob, from whichever package store holds it (storage/blob-stores.ts). */
  readonly blobs: BlobStore;
  /** The keepers of the feeds' package stores: uploads write through the one of their feed. */
  readonly keepers: FeedKeepers;
  readonly clock: Clock;
  readonly config: Config;
  readonly feeds: FeedService;
}
