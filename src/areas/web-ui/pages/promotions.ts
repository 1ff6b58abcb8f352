import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError, invalid } from "../../../domain/errors.js";
import { needOnFeed } from "../../../domain/principal.js";
import { quote } from "../../../domain/upack-manifest.js";
import { STATUS_BY_KIND } from "../../../http/errors.js";
import { type Feed, type FeedService, scopeOf } from "../../management/index.js";
import { callerOf, type PromotionRow, type RepackagingRow } from "../../promotions/index.js";
import { formFields } from "../form.js";
import type { WebUiDeps } from "../index.js";
import { PROMOTION_FORMS, PROMOTION_REFUSED, PROVENANCE } from "../templates/promotions.js";
import { defineView, sendPage } from "../views.js";
import { BROWSE_PAGE } from "./access.js";
import { PACKAGE_FEED_TYPES } from "./feeds-page.js";
import { formatDate, fullName, packagePageUrl } from "./present.js";

/**
 * Promotion and repackaging on the package page (issue 17 section 5; docs/compat.md 5.4, 9): the
 * shown version's provenance, the package's promotions into and out of the feed, and the promote
 * and repackage forms. Everything goes through the promotions API's service with the request as
 * its caller, so the page offers and the forms do exactly what the API allows (view on the source;
 * Feeds_AcceptPackagePromotions or Feeds_AddPackage on a promotion's target, Feeds_AddPackage on a
 * repackaging's). The forms post to `ui` routes, so ui-security.ts checks their CSRF token.
 */

defineView("package-promotion-forms", PROMOTION_FORMS);
defineView("package-provenance", PROVENANCE);
const REFUSED_VIEW = defineView("package-promotion-refused", PROMOTION_REFUSED);

/** Promotions listed on the page, newest first. */
const MAX_PROMOTIONS = 50;
/** Repackagings read to find the shown version's own (a version is rarely repackaged more than a few times). */
const MAX_REPACKAGINGS = 20;

const packageActionUrl = (action: string) => (feed: string, name: string) =>
  `/ui/feeds/${encodeURIComponent(feed)}/packages/${encodeURIComponent(name)}/${action}`;
/** Where the promote form posts (group and version are form fields, as for delete). */
export const uiPromoteUrl = packageActionUrl("promote");
/** Where the repackage form posts. */
export const uiRepackageUrl = packageActionUrl("repackage");

/** What the forms hold: empty on the package page, as sent when shown again after a refusal. */
interface FormValues {
  readonly toFeed: string;
  readonly promoteComments: string;
  readonly newVersion: string;
  /** "" is the version's own feed. */
  readonly repackageTo: string;
  readonly repackageComments: string;
}

const EMPTY_VALUES: FormValues = {
  toFeed: "",
  promoteComments: "",
  newVersion: "",
  repackageTo: "",
  repackageComments: "",
};

interface FormsView {
  readonly group: string;
  readonly version: string;
  readonly fullName: string;
  readonly feedType: string;
  readonly promoteAction: string;
  readonly repackageAction: string;
  readonly promoteTargets: string[];
  readonly repackageTargets: Array<{ value: string; label: string }>;
  readonly values: FormValues;
}

/**
 * The forms for a signed-in viewer (only sessions get a form token): the active feeds of the
 * source's type the viewer may promote to (not the source itself) and may add to (the source
 * first, as "this feed"). Undefined for anyone else.
 */
async function formsOf(
  request: FastifyRequest,
  feeds: FeedService,
  source: Feed,
  id: { group: string; name: string; version: string },
  values: FormValues,
): Promise<FormsView | undefined> {
  if (request.principal.type !== "user") return undefined;
  const type = source.feedType.toLowerCase();
  const promoteTargets: string[] = [];
  const repackageTargets: Array<{ value: string; label: string }> = [];
  for (const feed of await feeds.listFeeds()) {
    if (feed.feedType.toLowerCase() !== type || !feed.settings.active) continue;
    const scope = scopeOf(feed);
    const mayAdd = await request.can(needOnFeed("Feeds_AddPackage", scope));
    const isSource = feed.id === source.id;
    if (!isSource && (mayAdd || (await request.can(needOnFeed("Feeds_AcceptPackagePromotions", scope))))) {
      promoteTargets.push(feed.name);
    }
    if (mayAdd) {
      const target = isSource
        ? { value: "", label: `${feed.name} (this feed)` }
        : { value: feed.name, label: feed.name };
      if (isSource) repackageTargets.unshift(target);
      else repackageTargets.push(target);
    }
  }
  return {
    ...id,
    fullName: fullName(id.group, id.name),
    feedType: source.feedType,
    promoteAction: uiPromoteUrl(source.name, id.name),
    repackageAction: uiRepackageUrl(source.name, id.name),
    promoteTargets,
    repackageTargets,
    values,
  };
}

/** The version shown on the package page, as the browse queries read it. */
export interface ShownVersion {
  readonly version: string;
  readonly sha256: string;
  /** Its upack.json text. */
  readonly manifest: string;
}

/**
 * Whether the stored upack.json names the repackaging's original in its repackageHistory (by the
 * SHA-256 Wharf writes, or upack's `group/name:version:sha1` id): a version replaced by an upload
 * after it was repackaged no longer is the repackaging, and the page must not say it is.
 */
function manifestNamesOriginal(manifestText: string, row: RepackagingRow): boolean {
  let history: unknown;
  try {
    history = (JSON.parse(manifestText) as { repackageHistory?: unknown }).repackageHistory;
  } catch {
    return false;
  }
  if (!Array.isArray(history)) return false;
  const sha256 = row.from_sha256?.toLowerCase();
  const sha1 = row.from_sha1?.toLowerCase();
  return history.some((entry: unknown) => {
    if (entry === null || typeof entry !== "object") return false;
    const { _sha256: entrySha256, id } = entry as { _sha256?: unknown; id?: unknown };
    if (sha256 !== undefined && typeof entrySha256 === "string") return entrySha256.toLowerCase() === sha256;
    return sha1 !== undefined && typeof id === "string" && id.toLowerCase().endsWith(`:${sha1}`);
  });
}

const sameVersion = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * The package page's Provenance section for the shown version: the promotion that brought these
 * very bytes here (its SHA-256 is the shown one's), the repackaging that made it, what it was
 * repackaged as, the package's promotions into and out of the feed the viewer may see, and the
 * forms. The viewer may view the feed (the page asked).
 */
export async function provenanceOf(
  { feeds, promotions }: Pick<WebUiDeps, "feeds" | "promotions">,
  request: FastifyRequest,
  feed: Feed,
  pkg: { readonly group_name: string; readonly name: string },
  shown: ShownVersion,
) {
  const caller = callerOf(request);
  const id = { group: pkg.group_name, name: pkg.name };
  const versionHref = (feedName: string, version: string) => packagePageUrl(feedName, id.group, id.name, { version });
  const [intoVersion, listed, repackagings] = await Promise.all([
    promotions.listPromotions({ toFeed: feed.name, ...id, version: shown.version, limit: 1 }, caller),
    promotions.listPromotions({ feed: feed.name, ...id, limit: MAX_PROMOTIONS + 1 }, caller),
    promotions.listRepackagings({ feed: feed.name, ...id, version: shown.version, limit: MAX_REPACKAGINGS }, caller),
  ]);
  const promotion = intoVersion.find((row) => row.sha256?.toLowerCase() === shown.sha256.toLowerCase());
  const madeHere = repackagings.find(
    (row) =>
      row.feed_id === feed.id &&
      sameVersion(row.new_version, shown.version) &&
      manifestNamesOriginal(shown.manifest, row),
  );
  const repackagedAs = repackagings.filter(
    (row) => row.from_feed_id === feed.id && sameVersion(row.from_version, shown.version),
  );
  return {
    version: shown.version,
    fullName: fullName(id.group, id.name),
    feedName: feed.name,
    promotedFrom: promotion && {
      feed: promotion.from_feed_name,
      href: versionHref(promotion.from_feed_name, promotion.version),
      by: promotion.promoted_by,
      date: formatDate(promotion.promoted_at),
      comments: promotion.comments ?? undefined,
    },
    repackagedFrom: madeHere && {
      version: madeHere.from_version,
      feed: madeHere.from_feed_name,
      href: versionHref(madeHere.from_feed_name, madeHere.from_version),
      sha1: madeHere.from_sha1?.toLowerCase(),
      sha256: madeHere.from_sha256?.toLowerCase(),
      by: madeHere.repackaged_by,
      date: formatDate(madeHere.repackaged_at),
      comments: madeHere.comments ?? undefined,
    },
    repackagedAs: repackagedAs.map((row) => ({
      version: row.new_version,
      feed: row.feed_name,
      href: versionHref(row.feed_name, row.new_version),
      by: row.repackaged_by,
      date: formatDate(row.repackaged_at),
    })),
    promotions: listed.slice(0, MAX_PROMOTIONS).map((row: PromotionRow) => ({
      date: formatDate(row.promoted_at),
      version: row.version,
      // The version as this feed knows it: promoted into it, or the one that left it.
      href: versionHref(feed.name, row.version),
      from: row.from_feed_name,
      to: row.to_feed_name,
      by: row.promoted_by,
      comments: row.comments ?? "",
    })),
    promotionsCut: listed.length > MAX_PROMOTIONS,
    forms: await formsOf(request, feeds, feed, { ...id, version: shown.version }, EMPTY_VALUES),
  };
}

/** What a refusal page needs to know of the post. */
interface Posted {
  readonly feed: string;
  readonly group: string;
  readonly name: string;
  readonly version: string;
  readonly values: FormValues;
}

/**
 * POST /ui/feeds/:feed/packages/:name/promote and .../repackage (fields: group, version and the
 * form's own). Success: 303 to the version in its target feed. A refusal of the service is the
 * form again with its message and the status the API gives it (400 bad input, 403 no privilege,
 * 404, 409 the version exists), nothing written.
 */
export function registerPromotionRoutes(app: FastifyInstance, { feeds, promotions }: WebUiDeps): void {
  function posted(
    request: FastifyRequest,
    values: (fields: ReturnType<typeof formFields>) => Partial<FormValues>,
  ): Posted {
    const params = request.params as { feed: string; name: string };
    const fields = formFields(request.body);
    return {
      feed: params.feed,
      name: params.name,
      group: fields.text("group"),
      // A '+' of build metadata may arrive as a space; no version holds one.
      version: fields.text("version").trim().replaceAll(" ", "+"),
      values: { ...EMPTY_VALUES, ...values(fields) },
    };
  }

  const goTo = (reply: FastifyReply, feed: string, group: string, name: string, version: string) =>
    reply.redirect(packagePageUrl(feed, group, name, { version }), 303);

  async function refused(
    request: FastifyRequest,
    reply: FastifyReply,
    error: unknown,
    post: Posted,
    what: { form: "promote" | "repackage"; title: string; denied: string },
  ) {
    if (!(error instanceof DomainError)) throw error;
    const deniedAccess = error.kind === "forbidden" || error.kind === "unauthenticated";
    // The forms again only for a viewer of the source feed (the page they came from).
    const source = await feeds.findFeed(post.feed);
    const forms =
      source !== undefined &&
      PACKAGE_FEED_TYPES.has(source.feedType.toLowerCase()) &&
      (await request.can(needOnFeed("Feeds_ViewFeed", scopeOf(source))))
        ? await formsOf(request, feeds, source, post, post.values)
        : undefined;
    return sendPage(request, reply.code(STATUS_BY_KIND[error.kind]), REFUSED_VIEW, {
      title: what.title,
      message: deniedAccess ? what.denied : error.message,
      fullName: fullName(post.group, post.name),
      version: post.version,
      open: what.form,
      backHref: packagePageUrl(source?.name ?? post.feed, post.group, post.name, { version: post.version }),
      forms,
    });
  }

  app.post("/ui/feeds/:feed/packages/:name/promote", BROWSE_PAGE, async (request, reply) => {
    const post = posted(request, (fields) => ({
      toFeed: fields.text("toFeed"),
      promoteComments: fields.text("comments"),
    }));
    const toFeed = post.values.toFeed.trim();
    try {
      if (toFeed === "") throw invalid("MISSING_PARAMETER", "Choose the feed to promote to.");
      const record = await promotions.promote(
        {
          fromFeed: post.feed,
          toFeed,
          group: post.group,
          name: post.name,
          version: post.version,
          comments: post.values.promoteComments,
        },
        callerOf(request),
      );
      return goTo(reply, record.to_feed_name, record.package_group, record.package_name, record.version);
    } catch (error) {
      return refused(request, reply, error, post, {
        form: "promote",
        title: "Promotion refused",
        denied: `You may not promote from ${quote(post.feed)} to ${quote(toFeed)}: promoting needs Feeds_ViewFeed on the source feed and Feeds_AcceptPackagePromotions or Feeds_AddPackage on the target feed.`,
      });
    }
  });

  app.post("/ui/feeds/:feed/packages/:name/repackage", BROWSE_PAGE, async (request, reply) => {
    const post = posted(request, (fields) => ({
      newVersion: fields.text("newVersion"),
      repackageTo: fields.text("toFeed"),
      repackageComments: fields.text("comments"),
    }));
    const toFeed = post.values.repackageTo.trim() || undefined;
    try {
      if (post.values.newVersion.trim() === "") throw invalid("MISSING_PARAMETER", "Enter the new version.");
      const record = await promotions.repackage(
        {
          feed: post.feed,
          toFeed,
          group: post.group,
          name: post.name,
          version: post.version,
          newVersion: post.values.newVersion,
          comments: post.values.repackageComments,
        },
        callerOf(request),
      );
      return goTo(reply, record.feed_name, record.package_group, record.package_name, record.new_version);
    } catch (error) {
      return refused(request, reply, error, post, {
        form: "repackage",
        title: "Repackaging refused",
        denied: `You may not repackage into ${quote(toFeed ?? post.feed)}: repackaging needs Feeds_ViewFeed on the source feed and Feeds_AddPackage on the target feed.`,
      });
    }
  });
}
