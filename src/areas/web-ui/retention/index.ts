import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError } from "../../../domain/errors.js";
import { needOnFeed } from "../../../domain/principal.js";
import { actorOf } from "../../../lifecycle/events.js";
import { type Feed, feedCallerOf } from "../../management/index.js";
import { feedInputSchema } from "../../management/schemas.js";
import {
  isRetainedFeedType,
  presentRun,
  type RetentionPreview,
  type RetentionRun,
  unitOf,
} from "../../retention/index.js";
import { adminFeedUrl, retentionPageUrl } from "../admin/feeds-pages.js";
import { backTo, formFields, nameParam, orRefused, positiveId } from "../form.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound, sendStatus } from "../pages/access.js";
import { formatBytes, formatDate } from "../pages/present.js";
import { defineView, sendPage } from "../views.js";
import { ruleInWords } from "./rule-words.js";
import { RETENTION, RETENTION_RUN } from "./templates.js";

const PAGE_VIEW = defineView("retention", RETENTION);
const RUN_VIEW = defineView("retention-run", RETENTION_RUN);
const RUNS_SHOWN = 20;

/** What the rules form holds, shown again (escaped) when the feed service refuses it. */
interface RulesForm {
  readonly enabled: boolean;
  readonly schedule: string;
  readonly rules: string;
}

/** The part of the management API's feed body this form edits, checked by the API's own schema. */
const rulesInput = feedInputSchema.pick({ retentionRules: true, retentionSchedule: true, retentionRulesEnabled: true });

/** The form as the management API's body, or a 400 naming what is wrong. */
function inputOf(form: RulesForm) {
  let rules: unknown;
  try {
    rules = form.rules.trim() === "" ? [] : JSON.parse(form.rules);
  } catch (error) {
    throw new DomainError("invalid", "RETENTION_RULES_JSON", `The rules are not JSON: ${(error as Error).message}`);
  }
  const parsed = rulesInput.safeParse({
    retentionRules: rules,
    retentionSchedule: form.schedule.trim() === "" ? null : form.schedule,
    retentionRulesEnabled: form.enabled,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join(".") ?? "rules";
    throw new DomainError("invalid", "RETENTION_RULES_INVALID", `${where}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

const runRow = (feed: string, run: RetentionRun) => {
  const json = presentRun(run);
  return {
    id: json.id,
    href: `${retentionPageUrl(feed)}/runs/${json.id}`,
    status: json.status,
    trigger: json.trigger,
    by: json.requestedBy,
    created: formatDate(json.createdAt),
    finished: json.finishedAt === null ? "not yet" : formatDate(json.finishedAt),
    fromPreview: json.fromPreview,
    deleted: json.versionsDeleted,
    freed: formatBytes(json.bytesFreed),
    skipped: json.versionsSkipped,
  };
};

function previewView(preview: RetentionPreview, unit: "versions" | "files") {
  const one = preview.versions === 1;
  return {
    count: preview.versions,
    deleteLabel: one ? `Delete this ${unit.slice(0, -1)}` : `Delete these ${preview.versions} ${unit}`,
    examined: preview.examined,
    size: formatBytes(preview.bytes),
    evaluated: formatDate(preview.evaluatedAt),
    token: preview.token ?? "",
    items: preview.items.map((item) => ({
      what: item.path ?? (item.group === "" ? item.name : `${item.group}/${item.name}`),
      version: item.version,
      rule: item.rule,
      reason: item.reason,
      lastDownload: item.lastDownloadedAt === undefined ? "never" : formatDate(item.lastDownloadedAt),
      age: item.ageDays === 1 ? "1 day" : `${item.ageDays} days`,
      size: formatBytes(item.bytes),
    })),
  };
}

/**
 * A feed's retention (issue 17 section 5): its rules in words and as the API takes them, a
 * preview, a run of exactly that preview, and the past runs with their logs. Everything asks what
 * /api/retention asks, Admin_ManageFeed on the feed, and goes through the retention service and
 * the feed service as the APIs do.
 */
export function registerRetentionPages(app: FastifyInstance, { feeds, retention }: WebUiDeps): void {
  /** The feed named by the URL, once the viewer is known to manage it and its type to have retention. */
  async function retainedFeed(request: FastifyRequest, reply: FastifyReply): Promise<Feed | undefined> {
    const name = nameParam(request);
    if (!(await requireView(request, reply, needOnFeed("Admin_ManageFeed", name)))) return undefined;
    const feed = await feeds.findFeed(name);
    if (feed === undefined) {
      await sendNotFound(request, reply, "There is no feed with this name.");
      return undefined;
    }
    if (!isRetainedFeedType(feed.feedType)) {
      await sendStatus(
        request,
        reply,
        400,
        "No retention",
        `Retention applies to universal feeds and asset directories; ${feed.name} is a ${feed.feedType} feed.`,
      );
      return undefined;
    }
    return feed;
  }

  async function showPage(
    request: FastifyRequest,
    reply: FastifyReply,
    feed: Feed,
    extra: { form?: RulesForm; message?: string; preview?: RetentionPreview } = {},
  ) {
    const files = unitOf(feed) === "files";
    const { runs } = await retention.listRuns(feed.name, RUNS_SHOWN);
    const json = feeds.present(feed, { canPublish: false });
    const { settings } = feed;
    return sendPage(request, reply, PAGE_VIEW, {
      title: `Retention of ${feed.name}`,
      feed: { name: feed.name, adminUrl: adminFeedUrl(feed.name) },
      pageUrl: retentionPageUrl(feed.name),
      unit: unitOf(feed),
      schedule:
        settings.retentionSchedule === undefined
          ? "none"
          : `${settings.retentionSchedule} (UTC)${settings.retentionRulesEnabled ? "" : ", turned off"}`,
      rules: settings.retentionRules.map((rule) => ruleInWords(rule, files)),
      form: extra.form ?? {
        enabled: settings.retentionRulesEnabled,
        schedule: settings.retentionSchedule ?? "",
        rules: JSON.stringify(json.retentionRules, null, 2),
      },
      message: extra.message,
      preview: extra.preview === undefined ? undefined : previewView(extra.preview, unitOf(feed)),
      runs: runs.map((run) => runRow(feed.name, run)),
    });
  }

  app.get("/admin/feeds/:name/retention", BROWSE_PAGE, async (request, reply) => {
    const feed = await retainedFeed(request, reply);
    return feed === undefined ? reply : showPage(request, reply, feed);
  });

  app.post("/admin/feeds/:name/retention", BROWSE_PAGE, async (request, reply) => {
    const feed = await retainedFeed(request, reply);
    if (feed === undefined) return reply;
    const f = formFields(request.body);
    const form = { enabled: f.checked("enabled"), schedule: f.text("schedule"), rules: f.text("rules") };
    const done = await orRefused(
      reply,
      async () => feeds.updateFeed(feed.name, inputOf(form), feedCallerOf(request)),
      (message) => showPage(request, reply, feed, { form, message }),
    );
    if (done === undefined) return reply;
    request.log.info({ feed: feed.name }, "retention rules changed in the web UI");
    return backTo(reply, retentionPageUrl(feed.name));
  });

  // POST: a preview that can be run is kept (a token), a write.
  app.post("/admin/feeds/:name/retention/preview", BROWSE_PAGE, async (request, reply) => {
    const feed = await retainedFeed(request, reply);
    if (feed === undefined) return reply;
    const preview = await retention.preview(feed.name, { keep: true });
    return showPage(request, reply, feed, { preview });
  });

  app.post("/admin/feeds/:name/retention/run", BROWSE_PAGE, async (request, reply) => {
    const feed = await retainedFeed(request, reply);
    if (feed === undefined) return reply;
    const token = formFields(request.body).text("token");
    const done = await orRefused(
      reply,
      () =>
        retention.requestRun(feed.name, {
          trigger: "manual",
          requestedBy: actorOf(request.principal),
          ...(token === "" ? {} : { token }),
        }),
      (message) => showPage(request, reply, feed, { message }),
    );
    if (done === undefined) return reply;
    request.log.info({ feed: feed.name, run: done.value.run.id }, "retention run started in the web UI");
    return backTo(reply, `${retentionPageUrl(feed.name)}/runs/${done.value.run.id}`);
  });

  app.get("/admin/feeds/:name/retention/runs/:id", BROWSE_PAGE, async (request, reply) => {
    const feed = await retainedFeed(request, reply);
    if (feed === undefined) return reply;
    const id = positiveId((request.params as { id: string }).id);
    if (id === undefined) return sendNotFound(request, reply, "There is no such retention run.");
    let found: Awaited<ReturnType<typeof retention.getRun>>;
    try {
      found = await retention.getRun(feed.name, id);
    } catch (error) {
      if (error instanceof DomainError && error.kind === "not_found")
        return sendNotFound(request, reply, error.message);
      throw error;
    }
    return sendPage(request, reply, RUN_VIEW, {
      title: `Retention run #${id} of ${feed.name}`,
      feed: feed.name,
      pageUrl: retentionPageUrl(feed.name),
      unit: unitOf(feed),
      run: runRow(feed.name, found.run),
      log: found.log,
    });
  });
}
