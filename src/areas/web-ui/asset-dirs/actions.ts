import type { Multipart } from "@fastify/multipart";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type AssetPath, childPath, parseAssetPath } from "../../../domain/asset-path.js";
import { DomainError, invalid } from "../../../domain/errors.js";
import { acceptFormDataUploads, isFormDataUpload } from "../../../http/form-data-upload.js";
import { STATUS_BY_KIND } from "../../../http/errors.js";
import { storeFormUpload } from "../../endpoints/form-upload.js";
import type { Feed } from "../../management/index.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { formFields } from "../form.js";
import type { AssetPages } from "./browse-page.js";
import { metadataUpdate, postedForm } from "./edit-form.js";
import { type AssetAction, assetNeed, browseUrl, feedOf, namedPath, parentOf } from "./paths.js";

/**
 * The file browser's forms (no JavaScript needed): POST /ui/assets/<feed>/<action>/<path>/, each
 * a thin route over the asset directory service with the API's need for the same change. The CSRF
 * token (`_csrf`) is checked for every one of them by ui-security.ts; after a change, 303 to the
 * page (post/redirect/get).
 */
export async function registerAssetActions(app: FastifyInstance, deps: WebUiDeps, pages: AssetPages): Promise<void> {
  const { assets } = deps.endpoints;

  /** The directory and path of an action the viewer may take; undefined when the answer is sent. */
  async function target(request: FastifyRequest, reply: FastifyReply, action: AssetAction) {
    const feed = feedOf(request);
    if (!(await requireView(request, reply, assetNeed(action, feed)))) return undefined;
    const { path } = namedPath(request);
    return { feed, path, directory: await assets.directory(feed) };
  }

  const route = (action: string, handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>) => {
    app.post(`/ui/assets/:feed/${action}`, BROWSE_PAGE, handler);
    app.post(`/ui/assets/:feed/${action}/*`, BROWSE_PAGE, handler);
  };

  route("folder", async (request, reply) => {
    const found = await target(request, reply, "add");
    if (found === undefined) return reply;
    const { feed, path: parent, directory } = found;
    const name = formFields(request.body).text("name").trim();
    try {
      if (name === "") throw invalid("FOLDER_NAME_REQUIRED", "Give the new folder a name.");
      await assets.createFolder(directory, parseAssetPath(childPath(parent, name)));
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      const refused = { message: error.message, folderName: name };
      return pages.showFolder(
        request,
        reply.code(STATUS_BY_KIND[error.kind]),
        { directory, feed, folder: parent },
        refused,
      );
    }
    return reply.redirect(browseUrl(feed, parent.path, true), 303);
  });

  route("delete", async (request, reply) => {
    const found = await target(request, reply, "delete");
    if (found === undefined) return reply;
    const { feed, path, directory } = found;
    if (path.path === "") throw invalid("ROOT_NOT_DELETABLE", "The root folder cannot be deleted.");
    // The confirmation page said so: a folder goes with everything in it.
    await assets.delete(directory, path, { recursive: true, filesOnly: false });
    request.log.info({ feed, path: path.path }, "asset deleted in the web UI");
    return reply.redirect(browseUrl(feed, parentOf(path.path), true), 303);
  });

  route("metadata", async (request, reply) => {
    const found = await target(request, reply, "add");
    if (found === undefined) return reply;
    const { feed, path, directory } = found;
    const item = await assets.findItem(directory, path);
    if (item === undefined) return sendNotFound(request, reply, "No file or folder has this path.");
    const form = postedForm(request.body);
    try {
      await assets.updateMetadata(directory, path, metadataUpdate(form, item.isFolder));
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return pages.showEdit(request, reply.code(STATUS_BY_KIND[error.kind]), { feed, item }, form, error.message);
    }
    return reply.redirect(browseUrl(feed, item.path, item.isFolder), 303);
  });

  // The plain upload form: multipart/form-data, read in a scope of its own (acceptFormDataUploads).
  await app.register(async (scope) => {
    await acceptFormDataUploads(scope, deps.config.maxUploadBytes);
    const upload = {
      ...BROWSE_PAGE,
      // Before the CSRF check (a preHandler) and before any file byte: the need, then the token.
      preValidation: async (request: FastifyRequest, reply: FastifyReply) => {
        if (!(await requireView(request, reply, assetNeed("add", feedOf(request))))) return reply;
        await readLeadingToken(request);
        return undefined;
      },
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const feed = feedOf(request);
        const { path } = namedPath(request);
        if (!isFormDataUpload(request)) {
          throw invalid("FORM_REQUIRED", "Send the files as a multipart/form-data form (the page's upload form).");
        }
        const directory = await assets.directory(feed);
        const mayReplace = await request.can(assetNeed("overwrite", feed));
        await uploadInto(request, directory, path, mayReplace);
        return reply.redirect(browseUrl(feed, path.path, true), 303);
      },
    };
    scope.post("/ui/assets/:feed/upload", upload);
    scope.post("/ui/assets/:feed/upload/*", upload);
  });

  async function uploadInto(request: FastifyRequest, directory: Feed, folder: AssetPath, mayReplace: boolean) {
    // As the API's form upload to a folder URL: each file under the folder by its name, all or none.
    const items = await storeFormUpload(assets, request, {
      directory,
      path: folder,
      namesFolder: true,
      mode: "create-or-replace",
      mayReplace,
    });
    request.log.info({ feed: directory.name, files: items.length }, "assets uploaded in the web UI");
  }
}

/**
 * A browser's form cannot send the token as a header: the upload form carries `_csrf` as its first
 * field, read here before any file part, and put where the CSRF check looks (request.body). The
 * rest of the form is read from the same parser by storeFormUpload (request.parts answers it).
 * A form that does not start with the token is left without one: the CSRF check refuses it.
 */
export async function readLeadingToken(request: FastifyRequest): Promise<void> {
  if (typeof request.isMultipart !== "function" || !request.isMultipart()) return;
  const parts = request.parts();
  let first: IteratorResult<Multipart>;
  try {
    first = await parts.next();
  } catch {
    return;
  }
  if (first.done !== true && first.value.type === "field" && first.value.fieldname === "_csrf") {
    request.body = { _csrf: String(first.value.value) };
  }
  (request as { parts: () => AsyncIterableIterator<Multipart> }).parts = () => parts;
}
