import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { invalid } from "../../../domain/errors.js";
import { needOnFeed } from "../../../domain/principal.js";
import { isPlainObject } from "../../../domain/upack-manifest.js";
import { requireJsonBody } from "../../../http/json-reply.js";
import { param, parseBoolean } from "../../../http/params.js";
import { assertFeedAcceptsPackages, getUniversalFeed } from "../feed-lookup.js";
import type { AssetImport, ImportOutcome, UpackImportService } from "./service.js";
import type { UpackAreaOptions } from "../index.js";
import { errors, errorText, feedNeed, feedOf, TAGS } from "../http.js";
import { uploadResult } from "../write/routes.js";

/**
 * `POST /upack/<feed>/import` (docs/compat.md 2.9, 2.14): a package file from an asset directory or
 * from the server's import folder becomes a version, as an upload of its bytes would.
 * Feeds_AddPackage on the feed is declared (checked before the body is read); taking the file from
 * an asset directory also needs Feeds_DownloadPackage there, and Feeds_DeletePackage when it is
 * deleted from there, both checked before anything is read or stored.
 */
export interface UpackImportOptions extends UpackAreaOptions {
  readonly imports: UpackImportService;
}

interface ImportRequest {
  readonly from: string;
  readonly assetDirectory: string | undefined;
  readonly deleteFromSource: boolean;
}

export const upackImportRoutes: FastifyPluginAsync<UpackImportOptions> = async (app, options) => {
  const { imports } = options;

  app.post("/upack/:feed/import", {
    config: {
      access: {
        need: feedNeed("Feeds_AddPackage"),
      },
      storesUpload: true,
    },
    schema: {
      summary: "Import a package from an asset directory or a server path",
      description:
        "JSON `{assetDirectory?, from, deleteFromSource?}` (names in any case). With `assetDirectory`, `from` is a " +
        "file path in that directory ('\\' or '/' separators) and the version shares the file's stored content; " +
        "without it, `from` is a path inside the server's import folder (WHARF_IMPORT_ROOT; refused when unset). " +
        "The file (.upack or .vpack) is validated and stored as an upload of it would be; replacing a version " +
        "needs Feeds_OverwritePackage (else 409). `deleteFromSource` (default true) deletes the file once the " +
        "version is committed; from an asset directory that needs Feeds_DeletePackage there, and reading it " +
        "Feeds_DownloadPackage. 200 with the stored version (docs/compat.md 2.9).",
      tags: TAGS,
      response: {
        200: uploadResult,
        ...errors,
        409: errorText,
        413: errorText,
        415: errorText,
      },
    },
    handler: async (request, reply) => {
      const feed = await getUniversalFeed(options.feeds, feedOf(request));
      await requireJsonBody(request);
      const input = readImportRequest(request.body);
      assertFeedAcceptsPackages(feed);
      const target = {
        feedId: feed.id,
        principal: request.principal,
        canOverwrite: () => request.can(needOnFeed("Feeds_OverwritePackage", feed.name)),
        deleteFromSource: input.deleteFromSource,
      };
      const outcome =
        input.assetDirectory === undefined
          ? await imports.fromServerPath({ ...target, from: input.from })
          : await fromAssetDirectory(request, imports, {
              ...target,
              directory: input.assetDirectory,
              from: input.from,
            });
      if (outcome.sourceDeleteError !== undefined) {
        request.log.warn({ err: outcome.sourceDeleteError }, "import committed but its source could not be deleted");
      }
      // ProGet answers 200 here, unlike an upload's 201 (docs/compat.md 2.9).
      return reply.code(200).send(outcome.result);
    },
  });
};

/** Reading the file needs Feeds_DownloadPackage in its directory, deleting it Feeds_DeletePackage: checked first. */
async function fromAssetDirectory(
  request: FastifyRequest,
  imports: UpackImportService,
  command: AssetImport,
): Promise<ImportOutcome> {
  await request.authorize(needOnFeed("Feeds_DownloadPackage", command.directory));
  if (command.deleteFromSource) {
    await request.authorize(needOnFeed("Feeds_DeletePackage", command.directory));
  }
  return imports.fromAssetDirectory(command);
}

/** The import body, read leniently (docs/compat.md 0.1, 0.2): any case of the names, booleans as text too. */
function readImportRequest(body: unknown): ImportRequest {
  if (body !== undefined && !isPlainObject(body)) {
    throw invalid("INVALID_BODY", "The import request must be a JSON object.");
  }
  const from = param(body, "from");
  if (from === undefined) throw invalid("IMPORT_FROM_REQUIRED", "'from' is required: the path of the file to import.");
  const assetDirectory = param(body, "assetDirectory");
  const flag = param(body, "deleteFromSource");
  // Deleting is the default and cannot be undone: a value that is neither true nor false is refused.
  if (flag !== undefined && parseBoolean(flag, true) !== parseBoolean(flag, false)) {
    throw invalid("INVALID_DELETE_FROM_SOURCE", "'deleteFromSource' must be true or false.");
  }
  return { from, assetDirectory, deleteFromSource: parseBoolean(flag, true) };
}
