import { Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest, RouteOptions } from "fastify";
import { invalid } from "../../../domain/errors.js";
import { needOnFeed } from "../../../domain/principal.js";
import { isPlainObject } from "../../../domain/upack-manifest.js";
import { acceptFormDataUploads, isFormDataUpload, readFormDataUpload } from "../../../http/form-data-upload.js";
import { declaredBodyBytes, rawUploadBody } from "../../../http/upload-body.js";
import { claimedDigests } from "../../../http/upload-digests.js";
import type { Feed, FeedService } from "../../management/index.js";
import { assertFeedAcceptsPackages, getUniversalFeed } from "../feed-lookup.js";
import { feedOf } from "../http.js";
import type { UploadParams } from "./upload-params.js";
import type { UploadResult, UpackWriteService } from "./upload-service.js";

/**
 * The package upload request, read once for both faces of the universal feed area:
 * `/upack/<feed>/upload` (docs/compat.md 2.7) and pgutil's `/api/packages/<feed>/upload`
 * (docs/compat.md 3). Its body is one of:
 * - a form (`multipart/form-data`, curl -F): every file part is one package, all stored or none;
 *   text fields are parameters where the route takes any;
 * - JSON or urlencoded metadata, where the route parses them (content-b64, content-url);
 * - anything else: the package file itself, streamed.
 */
export interface PackageUploadDeps {
  readonly feeds: FeedService;
  readonly service: UpackWriteService;
  readonly maxUploadBytes: number;
}

/** A body's fields: JSON or urlencoded (parsed by the route's parsers), or a form's text fields. */
export interface UploadFields {
  readonly kind: "json" | "form";
  readonly fields: Record<string, unknown>;
}

export interface PackageUploads {
  readonly feed: Feed;
  readonly results: readonly UploadResult[];
  /** Whether the request was a form with several files: answered with a list, one entry per file. */
  readonly several: boolean;
}

/**
 * Registers `route` on each of `urls`, in a scope of their own that reads forms (nothing else
 * changes for other routes). With `metadataBodies` false (pgutil's face, whose body is always the
 * package file: pgutil sends no type, `curl -d` a urlencoded one), JSON and urlencoded bodies are
 * raw streams too, here and only here.
 */
export async function registerPackageUploadRoutes(
  app: FastifyInstance,
  route: RouteOptions,
  options: { readonly urls: readonly string[]; readonly maxUploadBytes: number; readonly metadataBodies: boolean },
): Promise<void> {
  await app.register(async (uploads) => {
    if (!options.metadataBodies) {
      uploads.removeAllContentTypeParsers();
      uploads.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
    }
    await acceptFormDataUploads(uploads, options.maxUploadBytes);
    for (const url of options.urls) uploads.route({ ...route, url });
  });
}

/**
 * Reads the upload and hands its package files, as streams, to the write service. `paramsOf`
 * gathers the upload's parameters from the request and the body's fields (undefined for a raw
 * body); for a form it is called once every part is read, since fields may follow the files.
 */
export async function receivePackageUploads(
  deps: PackageUploadDeps,
  request: FastifyRequest,
  paramsOf: (fields: UploadFields | undefined) => UploadParams,
): Promise<PackageUploads> {
  const feed = await getUniversalFeed(deps.feeds, feedOf(request));
  assertFeedAcceptsPackages(feed);
  const target = {
    feedId: feed.id,
    principal: request.principal,
    canOverwrite: () => request.can(needOnFeed("Feeds_OverwritePackage", feed.name)),
  };
  const digests = claimedDigests(request.headers);

  if (isFormDataUpload(request)) {
    let count = 0;
    const results = await deps.service.uploadFiles({
      ...target,
      receive: async (store) => {
        const form = await readFormDataUpload(request, {
          digests,
          noFileHint:
            "send the package as a file field (curl -F file=@<package>.upack), or the package itself as the body.",
          store: async (file) => store({ stream: file.stream, digests: file.digests, label: file.fileName }),
        });
        count = form.files.length;
        const fields: Record<string, unknown> = {};
        for (const [name, values] of form.fields) fields[name] = values.length === 1 ? values[0] : values;
        return paramsOf({ kind: "form", fields });
      },
    });
    return { feed, results, several: count > 1 };
  }

  const type = request.headers["content-type"]?.toLowerCase() ?? "";
  const kind = type.startsWith("application/json")
    ? "json"
    : type.startsWith("application/x-www-form-urlencoded")
      ? "form"
      : undefined;
  // Only where the route parsed the body (/upack): pgutil's face reads every body as the file.
  if (kind !== undefined && !(request.body instanceof Readable)) {
    if (request.body !== undefined && !isPlainObject(request.body)) {
      throw invalid("INVALID_BODY", "A JSON upload body must be an object.");
    }
    const params = paramsOf(request.body === undefined ? undefined : { kind, fields: request.body });
    const result = await deps.service.upload({ ...target, params, rawBody: undefined, digests });
    return { feed, results: [result], several: false };
  }
  const bodyBytes = declaredBodyBytes(request);
  const result = await deps.service.upload({
    ...target,
    params: paramsOf(undefined),
    rawBody: rawUploadBody(request, deps.maxUploadBytes, { emptyZipIsBody: true }),
    ...(bodyBytes !== undefined ? { rawBodyBytes: bodyBytes } : {}),
    digests,
  });
  return { feed, results: [result], several: false };
}
