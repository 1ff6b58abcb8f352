import { DomainError } from "../../domain/errors.js";
import { type AccessNeed, MANAGE_CONNECTORS, needOnFeed } from "../../domain/principal.js";
import type { StorageConfig } from "../../domain/package-store.js";
import { storeKeyOf } from "../../storage/store-factory.js";
import { ADMINISTER } from "../security/model.js";
import type { FeedDraft } from "./feed-settings.js";

/**
 * The checks of a feed change that depend on who asks and on the body, beyond the route's own
 * need (managing this feed): feed-group labels and connectors with stored credentials.
 */

/**
 * Who asks for a change; none (the CLI: an administrator at the server) may do anything.
 */
export interface FeedCaller {
  /** Whether the caller meets the need (request.can). */
  can(need: AccessNeed): Promise<boolean>;
}

/** What a feed needs to know of a connector it names. */
export interface ConnectorReference {
  /** As the connector spells it. */
  readonly name: string;
  /** Whether Wharf sends stored credentials (a user name, a password) to its upstream. */
  readonly hasCredentials: boolean;
}

/**
 * Feed groups are labels: a feed-group key or grant reaches whatever feeds carry the label. So
 * labelling a feed, or taking its label away (which escapes a feed-group deny), needs the right to
 * manage that group's feeds, not only this feed.
 */
export async function checkFeedGroup(
  before: FeedDraft | undefined,
  draft: FeedDraft,
  caller: FeedCaller | undefined,
): Promise<void> {
  const [from, to] = [before?.feedGroup, draft.feedGroup];
  if (caller === undefined || from?.toLowerCase() === to?.toLowerCase()) return;
  for (const group of [from, to]) {
    if (group === undefined) continue;
    // No feed id: a grant on this feed alone does not count, only global and feed-group ones.
    const scope = { id: undefined, name: draft.name, group };
    if (!(await caller.can(needOnFeed("Admin_ManageFeed", scope)))) {
      throw new DomainError(
        "forbidden",
        "FEED_GROUP_FORBIDDEN",
        `feedGroup: moving a feed into or out of the feed group '${group}' needs the right to manage that group's feeds`,
      );
    }
  }
}

/**
 * Of the lowercased names of connectors with stored credentials, those the caller may not newly
 * attach to a feed (all of them, unless the caller may manage connectors).
 */
export async function credentialsNotLent(
  credentialed: ReadonlySet<string>,
  caller: FeedCaller | undefined,
): Promise<ReadonlySet<string>> {
  if (credentialed.size === 0 || caller === undefined || (await caller.can(MANAGE_CONNECTORS))) return new Set();
  return credentialed;
}

/**
 * A connector with stored credentials lends them to whoever may pull through the feed: attaching
 * one needs the right to manage connectors. One the feed already has stays, so that a feed manager
 * can still send the whole feed back with its connectors unchanged.
 */
export function refuseNewlyAttached(before: readonly string[], draft: FeedDraft, refused: ReadonlySet<string>): void {
  if (refused.size === 0) return;
  const attached = new Set(before.map((name) => name.toLowerCase()));
  const added = draft.settings.connectors.find(
    (name) => !attached.has(name.toLowerCase()) && refused.has(name.toLowerCase()),
  );
  if (added !== undefined) {
    throw new DomainError(
      "forbidden",
      "CONNECTOR_CREDENTIALS_FORBIDDEN",
      `connectors: connector '${added}' uses stored credentials; attaching it to a feed needs the right to manage connectors`,
    );
  }
}

/**
 * Pointing a feed at an S3 bucket or Azure container makes the server connect, with the given
 * credentials, to a host the caller chooses, and moves the feed's content there: it needs the
 * right to configure the server, not only to manage the feed. The store the feed already has (the
 * same location) stays, so that a feed manager can still send the whole feed back unchanged.
 */
export async function checkStoreAuthority(
  before: StorageConfig | undefined,
  after: StorageConfig | undefined,
  caller: FeedCaller | undefined,
): Promise<void> {
  if (caller === undefined || after === undefined || after.id === "disk") return;
  if (before !== undefined && storeKeyOf(before) === storeKeyOf(after)) return;
  if (await caller.can(ADMINISTER)) return;
  throw new DomainError(
    "forbidden",
    "STORE_FORBIDDEN",
    `${after.id} storage: setting a feed's package store to an object store needs the right to configure the server (Admin_ConfigureProGet)`,
  );
}
