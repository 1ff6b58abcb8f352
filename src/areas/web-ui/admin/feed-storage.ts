import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { HIDDEN_SECRET, SECRET_STORAGE_PROPERTIES, type StorageConfig } from "../../../domain/package-store.js";
import type { MoveRow } from "../../../storage/feed-store-move-repository.js";
import type { Feed } from "../../management/feed-settings.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE } from "../pages/access.js";
import { formatBytes, formatDate } from "../pages/present.js";
import { backTo, formFields, orRefused } from "../form.js";

const fieldOf = (type: string, property: string) => `store-${type}-${property}`;

/** A value of the storage setting as text; a secret is never shown, not even as its placeholder. */
function shownValue(property: string, value: string | boolean | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (SECRET_STORAGE_PROPERTIES.has(property)) return "";
  return String(value);
}

/** The move between stores in words (the state GET /api/storage/move reports). */
function moveText(move: MoveRow | undefined): string {
  if (move === undefined) return "never moved";
  const progress = `${move.blobsDone} of ${move.blobsTotal} blobs, ${formatBytes(move.bytesDone)} of ${formatBytes(move.bytesTotal)}`;
  const route = `from ${move.fromStore} to ${move.toStore}`;
  if (move.state === "failed") return `failed ${route} (${progress}): ${move.error ?? "no detail"}`;
  if (move.finishedAt !== undefined)
    return `${move.state} ${route}, ${progress}, finished ${formatDate(move.finishedAt)}`;
  return `${move.state} ${route}: ${progress}`;
}

/**
 * The storage part of a feed's page: the setting as GET /api/storage?feed= shows it (secrets hidden
 * by the service, and left out here as well), each store's fields, and the state of the feed's move.
 */
export async function feedStorageView({ feeds, moves }: WebUiDeps, feed: Feed) {
  const storage: StorageConfig = await feeds.getStorage(feed.name);
  const types = feeds.storageTypes();
  const current = types.find((type) => type.id === storage.id);
  const move = await moves.find(feed.id);
  return {
    storage: {
      id: storage.id,
      typeName: current?.name ?? storage.id,
      shown: Object.entries(current?.properties ?? {})
        .filter(([key]) => !SECRET_STORAGE_PROPERTIES.has(key))
        .map(([key, property]) => ({
          name: property.name,
          value: shownValue(key, storage.properties[key]) || "(default)",
        })),
    },
    storageTypes: types.map((type) => ({
      id: type.id,
      name: type.name,
      properties: Object.entries(type.properties).map(([key, property]) => ({
        field: fieldOf(type.id, key),
        name: property.name,
        boolean: property.type === "boolean",
        secret: SECRET_STORAGE_PROPERTIES.has(key),
        placeholder: property.placeholder ?? "",
        value: type.id === storage.id ? shownValue(key, storage.properties[key]) : "",
      })),
    })),
    move: moveText(move),
    moveFailed: move?.state === "failed",
  };
}

interface FeedPageHooks {
  manageableFeed(request: FastifyRequest, reply: FastifyReply): Promise<Feed | undefined>;
  showFeed(
    request: FastifyRequest,
    reply: FastifyReply,
    feed: Feed,
    notes: { storageMessage?: string },
  ): Promise<unknown>;
}

/**
 * POST /admin/feeds/<name>/storage: what POST /api/storage?feed= does (Admin_ManageFeed on the
 * feed; the service validates and seals, the moves start the copy unless "new uploads only").
 * A secret left blank is sent as the API's hidden-secret marker, which keeps the stored one.
 */
export function registerFeedStorageAction(app: FastifyInstance, { feeds, moves }: WebUiDeps, page: FeedPageHooks) {
  app.post("/admin/feeds/:name/storage", BROWSE_PAGE, async (request, reply) => {
    const feed = await page.manageableFeed(request, reply);
    if (feed === undefined) return reply;
    const fields = formFields(request.body);
    const typeId = fields.text("storageType");
    const type = feeds.storageTypes().find((t) => t.id === typeId);
    const properties: Record<string, string | boolean | null> = {};
    for (const [key, property] of Object.entries(type?.properties ?? {})) {
      const value = fields.text(fieldOf(typeId, key));
      if (property.type === "boolean") properties[key] = value === "true";
      else if (SECRET_STORAGE_PROPERTIES.has(key) && value === "") properties[key] = HIDDEN_SECRET;
      else properties[key] = value === "" ? null : value;
    }
    const move = fields.text("move") === "false" ? false : undefined;
    const change = () => feeds.setStorage(feed.name, { id: typeId, properties }, { can: request.can.bind(request) });
    const done = await orRefused(
      reply,
      () => moves.changeStore(feed.id, move, change),
      (message) => page.showFeed(request, reply, feed, { storageMessage: message }),
    );
    if (done === undefined) return reply;
    request.log.info(
      { feed: feed.name, store: typeId, move: done.value.move?.state },
      "feed store changed in the web UI",
    );
    return backTo(reply, `/admin/feeds/${encodeURIComponent(feed.name)}#storage`);
  });

  // What POST /api/storage/move does: resume a failed move (409 MOVE_RUNNING while one runs).
  app.post("/admin/feeds/:name/move", BROWSE_PAGE, async (request, reply) => {
    const feed = await page.manageableFeed(request, reply);
    if (feed === undefined) return reply;
    const done = await orRefused(
      reply,
      () => moves.retry(feed.id),
      (message) => page.showFeed(request, reply, feed, { storageMessage: message }),
    );
    if (done === undefined) return reply;
    request.log.info({ feed: feed.name, move: done.value.state }, "feed store move retried in the web UI");
    return backTo(reply, `/admin/feeds/${encodeURIComponent(feed.name)}#storage`);
  });
}
