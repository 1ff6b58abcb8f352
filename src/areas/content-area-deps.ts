import type { Config } from "../config.js";
import type { Clock } from "../domain/clock.js";
import type { BlobKeeper } from "../storage/blob-keeper.js";
import type { BlobStore } from "../storage/blob-store.js";
import type { Db } from "../storage/database.js";
import type { FeedService } from "./management/index.js";

/** What an area that stores content (universal feeds, asset directories) is built from; app.ts builds it once. */
export interface ContentAreaDeps {
  readonly db: Db;
  readonly blobs: BlobStore;
  /** The app's one keeper of blobs in use by uploads: areas share content-addressed blobs. */
  readonly keeper: BlobKeeper;
  readonly clock: Clock;
  readonly config: Config;
  readonly feeds: FeedService;
}
