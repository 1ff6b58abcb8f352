import { actorOf } from "../../../lifecycle/events.js";
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from "fastify";
import { isFormDataUpload } from "../../../http/form-data-upload.js";
import { getUniversalFeed } from "../../upack/feed-lookup.js";
import { feedNeed } from "../../upack/http.js";
import { receivePackageUploads, registerPackageUploadRoutes } from "../../upack/write/upload-request.js";
import { readLeadingToken } from "../asset-dirs/actions.js";
import type { WebUiDeps } from "../index.js";
import { feedPageUrl, packagePageUrl, queryText } from "./present.js";

/** Where the upload zone of the feed and package pages posts (a form, or the script's raw body). */
export const uiUploadUrl = (feed: string) => `/ui/feeds/${encodeURIComponent(feed)}/upload`;
/** Where the package page's delete form posts (the version and group are form fields). */
export const uiDeleteUrl = (feed: string, name: string) =>
  `/ui/feeds/${encodeURIComponent(feed)}/packages/${encodeURIComponent(name)}/delete`;

/**
 * Publishing from the package and feed pages: thin `ui` routes over the very services and needs
 * of the universal feed API (upack/write/routes.ts): upload needs Feeds_AddPackage (replacing a
 * version Feeds_OverwritePackage, decided by the write service as for the API), delete needs
 * Feeds_DeletePackage, both declared on the route so that a refused upload is refused before its
 * body is read. The CSRF token is checked for both by ui-security.ts (a preHandler): the script
 * sends it as `x-csrf-token` with the package as the raw body; the plain form (no JavaScript)
 * carries `_csrf` as its first field, read before any file part (readLeadingToken).
 */
export async function registerPublishRoutes(app: FastifyInstance, { feeds, upack, config }: WebUiDeps): Promise<void> {
  const uploadDeps = { service: upack.write, feeds, maxUploadBytes: config.maxUploadBytes };
  const upload: RouteOptions = {
    method: "POST",
    url: "/ui/feeds/:feed/upload",
    config: { ui: true, access: { need: feedNeed("Feeds_AddPackage") }, storesUpload: true },
    preValidation: async (request: FastifyRequest) => {
      await readLeadingToken(request);
    },
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      // The package names itself in its upack.json, as on the packages API: no other metadata here.
      const uploads = await receivePackageUploads(uploadDeps, request, () => ({ metadata: {} }));
      const first = uploads.results[0];
      const href =
        first === undefined
          ? feedPageUrl(uploads.feed.name)
          : packagePageUrl(uploads.feed.name, first.group, first.name, { version: first.version });
      if (isFormDataUpload(request)) return reply.redirect(href, 303);
      return reply.code(201).send({ href, uploaded: uploads.results });
    },
  };
  await registerPackageUploadRoutes(app, upload, {
    urls: [upload.url],
    maxUploadBytes: config.maxUploadBytes,
    metadataBodies: false,
  });

  app.post(
    "/ui/feeds/:feed/packages/:name/delete",
    { config: { ui: true, access: { need: feedNeed("Feeds_DeletePackage") } } },
    async (request, reply) => {
      const params = request.params as { feed: string; name: string };
      const group = queryText(request.body, "group") ?? "";
      const version = queryText(request.body, "version") ?? "";
      const feed = await getUniversalFeed(feeds, params.feed);
      // The API's path `<group...>/<name>/<version>`: a missing version is the service's 400.
      const tail = [...(group === "" ? [] : [group]), params.name, version].join("/");
      await upack.write.deleteVersion(feed.id, tail, { actor: actorOf(request.principal) });
      const left = await upack.browse.findPackage(feed.id, group.toLowerCase(), params.name.toLowerCase());
      return reply.redirect(left ? packagePageUrl(feed.name, group, params.name) : feedPageUrl(feed.name), 303);
    },
  );
}
