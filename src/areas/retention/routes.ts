import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { needOnRequestFeed } from "../../http/feed-access.js";
import { requireJsonBody } from "../../http/json-reply.js";
import { actorOf } from "../../lifecycle/events.js";
import type { Feed } from "../management/index.js";
import type { RetentionRun } from "./repository.js";
import {
  errorText,
  feedQuery,
  previewSchema,
  runBodySchema,
  runParams,
  runSchema,
  runsQuery,
  runsSchema,
  runWithLogSchema,
} from "./schemas.js";
import type { RetentionPreview, RetentionService } from "./service.js";

/**
 * Retention (issue 17 section 1), Wharf's own API: `/api/retention/preview|run|runs?feed=<name>`,
 * for universal feeds (their versions) and asset directories (their files).
 * Everything here needs Admin_ManageFeed on the feed, the privilege that edits its rules (System
 * keys: the `feeds` scope; Feed keys never hold it): a run deletes whatever the rules say, so
 * only someone who may change the rules may start one or see what it would do.
 */

const TAGS = ["retention"];
const feedOf = (request: FastifyRequest) => (request.query as { feed?: unknown }).feed as string | undefined;
const MANAGE = { access: { need: needOnRequestFeed("Admin_ManageFeed", feedOf) } };
const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;

export const retentionRoutes: FastifyPluginAsync<{ service: RetentionService }> = async (app, { service }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();

  const sendPreview = (reply: FastifyReply, preview: RetentionPreview) =>
    // A preview of 100,000 versions is megabytes: serialised once, not checked item by item.
    reply.type("application/json; charset=utf-8").send(JSON.stringify(presentPreview(preview)) as never);

  api.route({
    method: "GET",
    url: "/api/retention/preview",
    schema: {
      summary: "What a retention run of the feed would delete now, and why",
      description:
        "Evaluates the feed's retentionRules in order and lists each version (asset directory: file) a run would " +
        "delete: the rule, why, its last download, age and size, with totals. Deletes nothing; POST keeps the list " +
        "for an hour under a token.",
      tags: TAGS,
      querystring: feedQuery,
      response: { 200: previewSchema, ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => sendPreview(reply, await service.preview(request.query.feed)),
  });

  api.route({
    method: "POST",
    url: "/api/retention/preview",
    schema: {
      summary: "Preview a retention run and keep the list for a run",
      description:
        "As GET, and answers a `token`: POST run with it deletes exactly this list (changed versions are skipped).",
      tags: TAGS,
      querystring: feedQuery,
      response: { 200: previewSchema, ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) => sendPreview(reply, await service.preview(request.query.feed, { keep: true })),
  });

  api.route({
    method: "POST",
    url: "/api/retention/run",
    schema: {
      summary: "Start a retention run of the feed",
      description:
        "Enqueues a run on the job runner and answers 202 with it. Without a body it deletes what the rules select " +
        "when it executes; with `{token}` from POST preview, exactly that preview's versions that the rules still " +
        "select unchanged (the others are skipped and reported). Follow it with GET runs/<id>.",
      tags: TAGS,
      querystring: feedQuery,
      body: runBodySchema.nullish(),
      response: { 202: runSchema, ...errors, 415: errorText },
    },
    config: MANAGE,
    preValidation: requireJsonBody,
    handler: async (request, reply) => {
      const token = request.body?.token ?? undefined;
      const { run } = await service.requestRun(request.query.feed, {
        trigger: "manual",
        requestedBy: actorOf(request.principal),
        ...(token === undefined ? {} : { token }),
      });
      return reply.code(202).send(presentRun(run));
    },
  });

  api.route({
    method: "GET",
    url: "/api/retention/runs",
    schema: {
      summary: "The feed's retention runs, newest first",
      tags: TAGS,
      querystring: runsQuery,
      response: { 200: runsSchema, ...errors },
    },
    config: MANAGE,
    handler: async (request) => {
      const { feed, runs } = await service.listRuns(request.query.feed, request.query.limit ?? 50);
      return { feed: feed.name, runs: runs.map(presentRun) };
    },
  });

  api.route({
    method: "GET",
    url: "/api/retention/runs/:id",
    schema: {
      summary: "One retention run with its log",
      tags: TAGS,
      params: runParams,
      querystring: feedQuery,
      response: { 200: runWithLogSchema, ...errors },
    },
    config: MANAGE,
    handler: async (request) => {
      const { feed, run, log } = await service.getRun(request.query.feed, request.params.id);
      return { ...presentRun(run), unit: unitOf(feed), log };
    },
  });
};

export function presentPreview(preview: RetentionPreview) {
  return {
    feed: preview.feed.name,
    unit: unitOf(preview.feed),
    evaluatedAt: preview.evaluatedAt,
    examined: preview.examined,
    versions: preview.versions,
    bytes: preview.bytes,
    ...(preview.token === undefined ? {} : { token: preview.token }),
    items: preview.items.map((item) => ({ ...item, lastDownloadedAt: item.lastDownloadedAt ?? null })),
  };
}

/** Asset directories' retention deletes files; every other retained feed's, versions. */
export const unitOf = (feed: Feed) => (feed.feedType === "asset" ? ("files" as const) : ("versions" as const));

export function presentRun(run: RetentionRun) {
  return {
    id: run.id,
    jobId: run.jobId ?? null,
    status: run.status ?? "failed",
    trigger: run.trigger,
    requestedBy: run.requestedBy,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt ?? null,
    fromPreview: run.planned !== undefined,
    versionsDeleted: run.versionsDeleted,
    bytesFreed: run.bytesFreed,
    versionsSkipped: run.versionsSkipped,
  };
}
