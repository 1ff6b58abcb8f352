import { feedCallerOf } from "../../management/index.js";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { SERVED_FEED_TYPES } from "../../../domain/feeds.js";
import { needOnFeed } from "../../../domain/principal.js";
import type { Feed } from "../../management/feed-settings.js";
import type { FeedInput } from "../../management/schemas.js";
import { scopeOf } from "../../management/visible-feeds.js";
import type { WebUiDeps } from "../index.js";
import { isRetainedFeedType } from "../../retention/index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { feedPageUrl } from "../pages/present.js";
import { defineView, sendPage } from "../views.js";
import { feedStorageView, registerFeedStorageAction } from "./feed-storage.js";
import { ADMIN_FEED, ADMIN_FEED_DELETE, ADMIN_FEEDS } from "./feeds-templates.js";
import { backTo, formFields, nameParam, orRefused, splitList } from "../form.js";

const FEEDS_VIEW = defineView("admin-feeds", ADMIN_FEEDS);
const FEED_VIEW = defineView("admin-feed", ADMIN_FEED);
const FEED_DELETE_VIEW = defineView("admin-feed-delete", ADMIN_FEED_DELETE);

export const adminFeedUrl = (name: string) => `/admin/feeds/${encodeURIComponent(name)}`;
/** A feed's retention page (web-ui/retention). */
export const retentionPageUrl = (name: string) => `${adminFeedUrl(name)}/retention`;

/** What the feed form holds. */
interface FeedForm {
  readonly name: string;
  readonly feedType: string;
  readonly feedGroup: string;
  readonly description: string;
  readonly connectors: string;
}

const EMPTY_FORM: FeedForm = { name: "", feedType: "universal", feedGroup: "", description: "", connectors: "" };

function formOf(body: unknown): FeedForm {
  const fields = formFields(body);
  return {
    name: fields.text("name"),
    feedType: fields.text("feedType"),
    feedGroup: fields.text("feedGroup"),
    description: fields.text("description"),
    connectors: fields.text("connectors"),
  };
}

/** The form as the management API's body: blank group and description remove them (null). */
function inputOf(form: FeedForm, creating: boolean): FeedInput {
  return {
    name: form.name,
    ...(creating ? { feedType: form.feedType } : {}),
    feedGroup: form.feedGroup.trim() === "" ? null : form.feedGroup,
    description: form.description === "" ? null : form.description,
    connectors: splitList(form.connectors),
  };
}

/**
 * Feed administration through the management API's FeedService, with its needs: listing shows the
 * feeds the viewer may manage (Admin_ManageFeed on each), creating needs Admin_ManageFeed globally,
 * editing and deleting it on the feed, and a rename also on the new name (as the API's update
 * route asks); the service checks what depends on the body (group, connectors) through `can`.
 */
export function registerFeedPages(app: FastifyInstance, deps: WebUiDeps): void {
  const { feeds } = deps;
  const manageAny = needOnFeed("Admin_ManageFeed");

  async function showList(request: FastifyRequest, reply: FastifyReply, form = EMPTY_FORM, message?: string) {
    const manageable: Feed[] = [];
    for (const feed of await feeds.listFeeds()) {
      if (await request.can(needOnFeed("Admin_ManageFeed", scopeOf(feed)))) manageable.push(feed);
    }
    return sendPage(request, reply, FEEDS_VIEW, {
      title: "Feeds",
      feeds: manageable.map((feed) => {
        const json = feeds.present(feed, { canPublish: false });
        return {
          name: feed.name,
          url: adminFeedUrl(feed.name),
          type: json.feedType,
          group: feed.feedGroup ?? "",
          description: json.description ?? "",
        };
      }),
      canCreate: await request.can(manageAny),
      creating: true,
      feedTypes: SERVED_FEED_TYPES,
      form,
      message,
    });
  }

  async function showFeed(
    request: FastifyRequest,
    reply: FastifyReply,
    feed: Feed,
    notes: { form?: FeedForm; message?: string; storageMessage?: string } = {},
  ) {
    const json = feeds.present(feed, { canPublish: false });
    const form = notes.form ?? {
      name: feed.name,
      feedType: json.feedType,
      feedGroup: feed.feedGroup ?? "",
      description: json.description ?? "",
      connectors: json.connectors.join(", "),
    };
    return sendPage(request, reply, FEED_VIEW, {
      title: `Feed ${feed.name}`,
      feed: {
        name: feed.name,
        url: adminFeedUrl(feed.name),
        browseUrl: feedPageUrl(feed.name),
        retentionUrl: isRetainedFeedType(feed.feedType) ? retentionPageUrl(feed.name) : undefined,
      },
      creating: false,
      form,
      message: notes.message,
      storageMessage: notes.storageMessage,
      ...(await feedStorageView(deps, feed)),
    });
  }

  /** The feed named by the URL, once the viewer is known to hold `Admin_ManageFeed` on it. */
  async function manageableFeed(request: FastifyRequest, reply: FastifyReply): Promise<Feed | undefined> {
    const name = nameParam(request);
    if (!(await requireView(request, reply, needOnFeed("Admin_ManageFeed", name)))) return undefined;
    const feed = await feeds.findFeed(name);
    if (feed === undefined) await sendNotFound(request, reply, "There is no feed with this name.");
    return feed;
  }

  app.get("/admin/feeds", BROWSE_PAGE, async (request, reply) => {
    // Anyone signed in may look: the list holds only what they manage.
    if (request.principal.type === "anonymous") return requireView(request, reply, manageAny).then(() => reply);
    return showList(request, reply);
  });

  app.post("/admin/feeds", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, manageAny))) return reply;
    const form = formOf(request.body);
    const done = await orRefused(
      reply,
      () => feeds.createFeed(inputOf(form, true), feedCallerOf(request)),
      (message) => showList(request, reply, form, message),
    );
    if (done === undefined) return reply;
    request.log.info({ feed: done.value.name }, "feed created in the web UI");
    return backTo(reply, adminFeedUrl(done.value.name));
  });

  app.get("/admin/feeds/:name", BROWSE_PAGE, async (request, reply) => {
    const feed = await manageableFeed(request, reply);
    return feed === undefined ? reply : showFeed(request, reply, feed);
  });

  app.post("/admin/feeds/:name", BROWSE_PAGE, async (request, reply) => {
    const feed = await manageableFeed(request, reply);
    if (feed === undefined) return reply;
    const form = formOf(request.body);
    // Taking a name needs the right to manage feeds under that name too (the API's update route).
    if (form.name.toLowerCase() !== feed.name.toLowerCase()) {
      if (!(await requireView(request, reply, needOnFeed("Admin_ManageFeed", form.name)))) return reply;
    }
    const done = await orRefused(
      reply,
      () => feeds.updateFeed(feed.name, inputOf(form, false), feedCallerOf(request)),
      (message) => showFeed(request, reply, feed, { form, message }),
    );
    if (done === undefined) return reply;
    request.log.info({ feed: done.value.name }, "feed changed in the web UI");
    return backTo(reply, adminFeedUrl(done.value.name));
  });

  app.get("/admin/feeds/:name/delete", BROWSE_PAGE, async (request, reply) => {
    const feed = await manageableFeed(request, reply);
    if (feed === undefined) return reply;
    return sendPage(request, reply, FEED_DELETE_VIEW, {
      title: `Delete feed ${feed.name}`,
      name: feed.name,
      url: adminFeedUrl(feed.name),
    });
  });

  app.post("/admin/feeds/:name/delete", BROWSE_PAGE, async (request, reply) => {
    const feed = await manageableFeed(request, reply);
    if (feed === undefined) return reply;
    await feeds.deleteFeed(feed.name);
    request.log.info({ feed: feed.name }, "feed deleted in the web UI");
    return backTo(reply, "/admin/feeds");
  });

  registerFeedStorageAction(app, deps, { manageableFeed, showFeed });
}
