import type { Readable } from "node:stream";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { invalid } from "../../../domain/errors.js";
import { needOnFeed } from "../../../domain/principal.js";
import { attachment } from "../../../http/content-disposition.js";
import { hasParam, param, type QueryLike } from "../../../http/params.js";
import { queryDoc } from "../../../http/query-doc.js";
import type { HotResponses } from "../../../http/hot-responses.js";
import { sendBlob, type SendBlobOptions } from "../../../http/send-blob.js";
import { canReadSmall } from "../../../storage/blob-cache.js";
import type { BlobStore } from "../../../storage/blob-store.js";
import {
  announcesDeployment,
  type DownloadedVersion,
  recordAnnouncedDeployment,
} from "../../package-deployment/index.js";
import { contentTypeFor, contentTypeOf, type DownloadFormat, packageFileName, VPACK_CONTENT_TYPE } from "./headers.js";
import { parsePackageFilePath } from "./path.js";
import type { DownloadTarget, StoredPackage, UpackDownloadService } from "./service.js";
import type { Located, PullOptions, RemoteDownloads, RemoteTarget } from "../remote/downloads.js";
import { CONNECTOR_FAILURES_HEADER, reportFailures } from "../remote/failures.js";
import { errors, feedNeed, feedOf, TAGS } from "../http.js";

/**
 * Universal feed downloads (docs/seed-api.md area A: download package, download package file, download
 * virtual package; docs/compat.md 2.4-2.6, 2.12). Each is addressed by `<group...>/<name>/<version>`
 * or `<group...>/<name>?latest`, routed as one wildcard because the group may hold '/' or `%2F`
 * (docs/clients.md 4 item 3). Privileges (docs/compat.md 2.14): Feeds_DownloadPackage on the feed.
 * HEAD is declared where a body is streamed, so that it never reads one.
 */
export interface UpackDownloadRoutesOptions {
  readonly downloads: UpackDownloadService;
  readonly blobs: BlobStore;
  /** Versions of feeds' connectors (remote/downloads.ts); absent: only what feeds store is served. */
  readonly remote?: RemoteDownloads | undefined;
  /** Replays of whole small package files to repeated GETs (http/hot-responses.ts); absent: none. */
  readonly hot?: HotResponses | undefined;
}

const LATEST_DOC = "Present (bare or with any value) when the path names no version";
const PACKAGE_PATH_DOC =
  "Path `<group...>/<name>/<version>`, or `<group...>/<name>` with `?latest` (the highest version, " +
  "prereleases included). The group may contain '/' or `%2F`.";

const tailOf = (request: FastifyRequest) => (request.params as { "*": string })["*"];
const latestOf = (request: FastifyRequest) => hasParam(request.query as QueryLike, "latest");

/** `contentOnly` absent: the package file; empty or `zip`: a ZIP of the contents; `tgz`: a gzipped TAR. */
function formatOf(query: QueryLike): DownloadFormat {
  if (!hasParam(query, "contentOnly")) return "upack";
  const value = (param(query, "contentOnly") ?? "zip").toLowerCase();
  if (value === "zip" || value === "tgz") return value;
  throw invalid("INVALID_CONTENT_ONLY", "'contentOnly' must be 'zip' or 'tgz'.");
}

/**
 * A GET counts as one download, and records the deployment it announces, when it starts at byte 0:
 * a full 200, or a 206 for a range from the first byte. Resumed or parallel ranges further in are
 * parts of a download already counted, so counting them would multiply one download by its number
 * of pieces. 304s and HEADs transfer
 * no package and never count.
 */
function startsDownload(request: FastifyRequest, reply: FastifyReply): boolean {
  if (request.method !== "GET") return false;
  if (reply.statusCode === 200) return true;
  return reply.statusCode === 206 && String(reply.getHeader("content-range")).startsWith("bytes 0-");
}

/**
 * Counts the download once its response is under way, when it starts one (startsDownload): for
 * /upack and pgutil's /api/packages alike. A lost count must not turn the response into an error.
 */
export async function countDownload(
  downloads: UpackDownloadService,
  request: FastifyRequest,
  reply: FastifyReply,
  target: DownloadTarget,
): Promise<void> {
  if (!startsDownload(request, reply)) return;
  try {
    await downloads.countDownload(target);
  } catch (error) {
    request.log.error({ err: error, versionId: target.versionId }, "download count not recorded");
  }
}

/**
 * Records the deployment a download's X-ProGet-Deployment-* headers announce (docs/compat.md 2.4),
 * stored or remote version, when its status shows it starts one (startsDownload). Called once the
 * status is set and awaited before the body goes out, so that a client holding the body finds
 * the record in its next listing on PostgreSQL too, where the write is a round trip: only
 * downloads that announce one wait for it. A failure is logged, never thrown (download-headers.ts).
 * Undefined, synchronously, when there is nothing to record.
 */
function announceDeployment(
  downloads: UpackDownloadService,
  request: FastifyRequest,
  reply: FastifyReply,
  version: DownloadedVersion,
): Promise<void> | undefined {
  if (!startsDownload(request, reply)) return undefined;
  return recordAnnouncedDeployment(request, version, downloads.recordDeployment);
}

/** sendBlob's options for a package download: the deployment it announces is recorded before its body. */
export function announcingDeployment(
  downloads: UpackDownloadService,
  request: FastifyRequest,
  reply: FastifyReply,
  version: DownloadedVersion,
): SendBlobOptions {
  return { beforeBody: () => announceDeployment(downloads, request, reply, version) };
}

/** The version a download serves, as a deployment names it: the feed's own or a connector's. */
function deployedVersion(located: Located): DownloadedVersion {
  return located.target ?? remoteVersion(located.remote);
}

function remoteVersion({ feed, group, name, version }: RemoteTarget): DownloadedVersion {
  return { feedId: feed.id, group, name, version };
}

function pullOptions(request: FastifyRequest, feed: { name: string }): PullOptions {
  return {
    principal: request.principal,
    canPull: () => request.can(needOnFeed("Feeds_PullPackage", feed.name)),
    log: request.log,
  };
}

export const upackDownloadRoutes: FastifyPluginAsync<UpackDownloadRoutesOptions> = async (app, options) => {
  const { downloads, blobs, remote, hot } = options;
  const download = { access: { need: feedNeed("Feeds_DownloadPackage") } };

  const locate = (request: FastifyRequest): Promise<Located> =>
    remote
      ? remote.locate(feedOf(request), tailOf(request), latestOf(request))
      : downloads.resolve(feedOf(request), tailOf(request), latestOf(request));

  /** The stored file, or a remote version's fetched into the store, let go once the response is done. */
  async function fileOf(request: FastifyRequest, reply: FastifyReply, located: Located): Promise<StoredPackage> {
    if (located.remote === undefined) return downloads.packageFile(located.feed, located.target);
    const fetched = await (remote as RemoteDownloads).materialize(located.remote, pullOptions(request, located.feed));
    if (reply.raw.destroyed) void fetched.release();
    else reply.raw.once("close", () => void fetched.release());
    return fetched.file;
  }

  /**
   * A stored package file just sent whole from memory is kept for replays to the same URL, which
   * count the download as this route does; a request announcing a deployment takes the full path.
   */
  async function keepForReplays(
    request: FastifyRequest,
    reply: FastifyReply,
    version: string,
    target: DownloadTarget,
    file: StoredPackage,
  ): Promise<void> {
    if (hot === undefined || reply.statusCode !== 200 || !canReadSmall(blobs)) return;
    // An answer given without a connector is not the answer to replay (remote/failures.ts).
    if (reply.hasHeader(CONNECTOR_FAILURES_HEADER)) return;
    const body = await blobs.readSmall(file.sha256, file.size);
    if (body === undefined) return;
    hot.keep(request, reply, {
      version,
      body,
      mayReplay: (raw) => !announcesDeployment(raw.headers),
      replayed: (log) =>
        void downloads
          .countDownload(target)
          .catch((error: unknown) =>
            log.error({ err: error, versionId: target.versionId }, "download count not recorded"),
          ),
    });
  }

  /**
   * A 200 with its headers set, sent once the deployment it announces is recorded (announceDeployment).
   * Not counted here: the caller counts the downloads of the feed's own versions once the body is under way.
   */
  async function sendAnnounced(
    request: FastifyRequest,
    reply: FastifyReply,
    version: DownloadedVersion,
    body: Readable | undefined,
  ) {
    reply.code(200);
    const announced = announceDeployment(downloads, request, reply, version);
    if (announced !== undefined) await announced;
    return reply.send(body);
  }

  /** A remote version's package file, streamed from the upstream (and maybe kept: remote/downloads.ts). */
  async function sendRemote(request: FastifyRequest, reply: FastifyReply, target: RemoteTarget) {
    reply
      .header("Content-Type", contentTypeOf("upack"))
      .header("Content-Disposition", attachment(packageFileName(target.name, target.version, "upack")))
      .header("X-Content-Type-Options", "nosniff");
    if (target.published) reply.header("Last-Modified", target.published.toUTCString());
    if (request.method === "HEAD") {
      if (target.size !== undefined) reply.header("Content-Length", String(target.size));
      return reply.code(200).send();
    }
    const { body, length } = await (remote as RemoteDownloads).stream(target, pullOptions(request, target.feed));
    if (length !== undefined) reply.header("Content-Length", String(length));
    return sendAnnounced(request, reply, remoteVersion(target), body);
  }

  app.route({
    method: ["GET", "HEAD"],
    url: "/upack/:feed/download/*",
    schema: {
      summary: "Download a package",
      description:
        `${PACKAGE_PATH_DOC} Without \`contentOnly\`: the stored .upack unchanged, with ETag, Last-Modified ` +
        "and Range support. `contentOnly` (empty or `zip`, or `tgz`): the `package/` contents as a new archive. " +
        "On a feed with connectors, a version it does not store is streamed from the first connector that has it " +
        "(and kept when the feed caches connectors and the caller has Feeds_PullPackage); 502/504 naming the " +
        "connector when its upstream fails.",
      tags: TAGS,
      querystring: queryDoc({ latest: LATEST_DOC, contentOnly: "`zip` (also when empty) or `tgz`" }),
      response: { 200: z.unknown().describe("The package or its contents"), ...errors },
    },
    config: download,
    handler: async (request, reply) => {
      const query = request.query as QueryLike;
      const format = formatOf(query);
      // Taken before anything is read: a response kept for replays is valid for what was read then.
      const version = hot?.version();
      const located = await locate(request);
      reportFailures(reply, located);
      if (located.remote !== undefined && format === "upack") {
        return sendRemote(request, reply, located.remote);
      }
      const file = await fileOf(request, reply, located);
      const named = located.target ?? located.remote;
      const disposition = attachment(packageFileName(named.name, named.version, format));
      if (format === "upack") {
        await sendBlob(
          request,
          reply,
          { ...file, contentType: contentTypeOf(format), contentDisposition: disposition },
          blobs,
          announcingDeployment(downloads, request, reply, deployedVersion(located)),
        );
        if (version !== undefined && located.target !== undefined) {
          await keepForReplays(request, reply, version, located.target, file);
        }
      } else {
        // Opened before any header is set, so that a failure is a plain error response. HEAD builds nothing.
        const contents = request.method === "HEAD" ? undefined : await downloads.openContents(file, format);
        reply
          .header("Content-Type", contentTypeOf(format))
          .header("Content-Disposition", disposition)
          .header("Last-Modified", file.lastModified.toUTCString())
          .header("X-Content-Type-Options", "nosniff");
        await sendAnnounced(request, reply, deployedVersion(located), contents);
      }
      if (located.target !== undefined) await countDownload(downloads, request, reply, located.target);
      return reply;
    },
  });

  app.route({
    method: ["GET", "HEAD"],
    url: "/upack/:feed/download-file/*",
    schema: {
      summary: "Download one file from a package",
      description:
        `${PACKAGE_PATH_DOC} \`path\`: the file's path from the archive root (\`package/...\`, \`upack.json\`); ` +
        "exact match first, then ignoring case. 403 for a directory, 404 for a missing file.",
      tags: TAGS,
      querystring: queryDoc({
        path: "Path of the file from the archive root, e.g. `package/bin/tool`",
        latest: LATEST_DOC,
      }),
      response: { 200: z.unknown().describe("The file"), ...errors },
    },
    config: download,
    handler: async (request, reply) => {
      const path = parsePackageFilePath(param(request.query as QueryLike, "path"));
      const found = await downloads.openFile(await fileOf(request, reply, await locate(request)), path);
      const leaf = found.entry.name.slice(found.entry.name.lastIndexOf("/") + 1);
      reply
        .header("Content-Type", contentTypeFor(leaf))
        .header("Content-Disposition", attachment(leaf))
        .header("Content-Length", String(found.entry.size))
        .header("Last-Modified", found.entry.modified.toUTCString())
        .header("X-Content-Type-Options", "nosniff");
      if (request.method === "HEAD") {
        await found.close();
        return reply.code(200).send();
      }
      return reply.code(200).send(found.stream());
    },
  });

  app.get("/upack/:feed/download-vpack/*", {
    schema: {
      summary: "Download the manifest of a virtual package",
      description: `${PACKAGE_PATH_DOC} The .vpack (JSON) of a virtual package; 404 for a package that is not virtual.`,
      tags: TAGS,
      querystring: queryDoc({ latest: LATEST_DOC }),
      response: { 200: z.unknown().describe("The virtual package manifest (JSON)"), ...errors },
    },
    config: download,
    handler: async (request, reply) => {
      const { target } = await downloads.resolve(feedOf(request), tailOf(request), latestOf(request));
      const manifest = await downloads.virtualManifest(target);
      return reply
        .code(200)
        .header("Content-Type", `${VPACK_CONTENT_TYPE}; charset=utf-8`)
        .header("Content-Disposition", attachment(packageFileName(target.name, target.version, "vpack")))
        .header("X-Content-Type-Options", "nosniff")
        .send(manifest);
    },
  });
};
