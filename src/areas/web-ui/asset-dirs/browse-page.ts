import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AssetPath } from "../../../domain/asset-path.js";
import type { AssetItem } from "../../endpoints/repository.js";
import { contentTypeOf } from "../../endpoints/service.js";
import type { Feed } from "../../management/index.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { formatBytes, formatDate, pageNumber, queryText } from "../pages/present.js";
import { defineView, sendPage } from "../views.js";
import { editForm, CACHE_TYPES, type EditForm } from "./edit-form.js";
import { actionUrl, type AssetAction, assetNeed, breadcrumbs, browseUrl, feedOf, fileUrl, namedPath } from "./paths.js";
import { previewKind, readTextPreview, TEXT_PREVIEW_BYTES } from "./preview.js";
import { ASSET_DELETE, ASSET_EDIT, ASSET_FILE, ASSET_FOLDER } from "./templates.js";

const FOLDER_VIEW = defineView("asset-dirs-folder", ASSET_FOLDER);
const FILE_VIEW = defineView("asset-dirs-file", ASSET_FILE);
const EDIT_VIEW = defineView("asset-dirs-edit", ASSET_EDIT);
const DELETE_VIEW = defineView("asset-dirs-delete", ASSET_DELETE);

/** Items a folder page shows at once: a folder of 100,000 files is paged, never rendered whole. */
export const FOLDER_PAGE_SIZE = 200;

/** What the viewer may do in this directory, each asked as the API asks it. */
async function abilities(request: FastifyRequest, feed: string) {
  const can = (action: AssetAction) => request.can(assetNeed(action, feed));
  const [download, add, remove] = await Promise.all([can("download"), can("add"), can("delete")]);
  return { download, add, delete: remove };
}

/** The displayed name of an item or folder: its last segment, or the directory's name for the root. */
const titleOf = (feed: string, path: string) => (path === "" ? feed : path.slice(path.lastIndexOf("/") + 1));

export interface AssetPages {
  /** The folder page, with a refused form's message and value (the new folder's name). */
  showFolder(
    request: FastifyRequest,
    reply: FastifyReply,
    target: { directory: Feed; feed: string; folder: AssetPath },
    refused?: { message: string; folderName: string },
  ): Promise<FastifyReply>;
  showEdit(
    request: FastifyRequest,
    reply: FastifyReply,
    target: { feed: string; item: AssetItem },
    form: EditForm,
    message?: string,
  ): Promise<FastifyReply>;
}

/**
 * GET /assets/<feed>/<path...>: a folder (the URL ends with '/') or a file, and their `?edit`
 * and `?delete` steps. Viewing needs what listing needs on the API (Feeds_ViewFeed), asked before
 * the directory is looked up; the file's bytes and each action are offered only to viewers who
 * hold the API's need for them.
 */
export function registerAssetPages(app: FastifyInstance, deps: WebUiDeps): AssetPages {
  const { assets } = deps.endpoints;

  const pages: AssetPages = {
    async showFolder(request, reply, { directory, feed, folder }, refused) {
      const all = await assets.list(directory, folder, false);
      // Folders first, then files, each in the repository's path order.
      const sorted = [...all.filter((item) => item.isFolder), ...all.filter((item) => !item.isFolder)];
      const pages = Math.max(1, Math.ceil(sorted.length / FOLDER_PAGE_SIZE));
      const page = Math.min(pageNumber(queryText(request.query, "page")), pages);
      const here = browseUrl(feed, folder.path, true);
      const can = await abilities(request, feed);
      return sendPage(request, reply, FOLDER_VIEW, {
        title: titleOf(feed, folder.path),
        // The root's crumbs stop at Feeds: its own name is the heading.
        crumbs: breadcrumbs(feed, folder.path).slice(0, folder.path === "" ? 1 : undefined),
        items: sorted.slice((page - 1) * FOLDER_PAGE_SIZE, page * FOLDER_PAGE_SIZE).map((item) => ({
          name: titleOf(feed, item.path),
          href: browseUrl(feed, item.path, item.isFolder),
          isFolder: item.isFolder,
          size: item.file === undefined ? "" : formatBytes(item.file.size),
          type: item.isFolder ? "folder" : contentTypeOf(item),
          modified: formatDate(item.modifiedAt),
        })),
        page,
        pages,
        total: sorted.length,
        previous: page > 1 ? `${here}?page=${page - 1}` : undefined,
        next: page < pages ? `${here}?page=${page + 1}` : undefined,
        can,
        actions: {
          upload: actionUrl("upload", feed, folder.path),
          folder: actionUrl("folder", feed, folder.path),
          // The upload script's target: the API's file route under /ui, this folder's URL.
          uploadBase: folder.path === "" ? fileUrl(feed, "") : `${fileUrl(feed, folder.path)}/`,
        },
        editHref: can.add && folder.path !== "" ? `${here}?edit` : undefined,
        deleteHref: can.delete && folder.path !== "" ? `${here}?delete` : undefined,
        message: refused?.message,
        folderName: refused?.folderName ?? "",
      });
    },

    async showEdit(request, reply, { feed, item }, form, message) {
      return sendPage(request, reply, EDIT_VIEW, {
        title: `Settings of ${titleOf(feed, item.path)}`,
        crumbs: breadcrumbs(feed, item.path),
        isFolder: item.isFolder,
        action: actionUrl("metadata", feed, item.path),
        back: browseUrl(feed, item.path, item.isFolder),
        cacheTypes: CACHE_TYPES,
        form,
        message,
      });
    },
  };

  async function showFile(
    request: FastifyRequest,
    reply: FastifyReply,
    directory: Feed,
    feed: string,
    item: AssetItem,
  ) {
    const served = await assets.serve(directory, item);
    const file = served.item.file;
    const can = await abilities(request, feed);
    const here = browseUrl(feed, item.path, false);
    return sendPage(request, reply, FILE_VIEW, {
      title: titleOf(feed, item.path),
      crumbs: breadcrumbs(feed, item.path),
      file: {
        size: formatBytes(file.size),
        bytes: file.size,
        type: served.contentType,
        modified: formatDate(item.modifiedAt),
        created: formatDate(item.createdAt),
        cacheControl: served.cacheControl,
        cacheSetting: item.cacheHeader.type === "Inherit" ? "inherited" : "set on this file",
        sha256: file.sha256,
        sha1: file.sha1,
        md5: file.md5,
      },
      metadata: Object.entries(item.userMetadata).map(([name, entry]) => ({ name, ...entry })),
      preview: can.download
        ? await previewOf(served.contentType, file, fileUrl(feed, item.path))
        : { kind: "none", reason: "You may not download this file." },
      downloadHref: can.download ? fileUrl(feed, item.path) : undefined,
      editHref: can.add ? `${here}?edit` : undefined,
      deleteHref: can.delete ? `${here}?delete` : undefined,
    });
  }

  async function previewOf(contentType: string, file: { sha256: string; size: number }, src: string) {
    const kind = previewKind(contentType);
    if (kind === "image" || kind === "sandboxed") return { kind, src };
    if (kind === "text") {
      const text = await readTextPreview(deps.content.blobs, file);
      if (text !== undefined) return { kind, ...text, limit: formatBytes(TEXT_PREVIEW_BYTES) };
      return { kind: "none", reason: "This file is not text: download it to see it." };
    }
    return { kind: "none", reason: `Files of type ${contentType} are not previewed: download it to see it.` };
  }

  async function browse(request: FastifyRequest, reply: FastifyReply) {
    const feed = feedOf(request);
    if (!(await requireView(request, reply, assetNeed("view", feed)))) return reply;
    const { path, endsWithSlash } = namedPath(request);
    const directory = await assets.directory(feed);
    const item = path.path === "" ? undefined : await assets.findItem(directory, path);
    if (path.path !== "" && item === undefined) return sendNotFound(request, reply, "No file or folder has this path.");
    const isFolder = item === undefined || item.isFolder;
    const query = request.query as Record<string, unknown>;
    // A folder's URL ends with '/', a file's does not: relative links and the breadcrumbs rely on it.
    if (isFolder !== endsWithSlash) {
      const search = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
      return reply.redirect(`${browseUrl(feed, item?.path ?? "", isFolder)}${search}`, 301);
    }
    if (item !== undefined && "edit" in query) {
      if (!(await requireView(request, reply, assetNeed("add", feed)))) return reply;
      return pages.showEdit(request, reply, { feed, item }, editForm(item));
    }
    if (item !== undefined && "delete" in query) {
      if (!(await requireView(request, reply, assetNeed("delete", feed)))) return reply;
      return sendPage(request, reply, DELETE_VIEW, {
        title: titleOf(feed, item.path),
        crumbs: breadcrumbs(feed, item.path),
        isFolder: item.isFolder,
        action: actionUrl("delete", feed, item.path),
        back: browseUrl(feed, item.path, item.isFolder),
      });
    }
    if (item === undefined || item.isFolder) return pages.showFolder(request, reply, { directory, feed, folder: path });
    return showFile(request, reply, directory, feed, item);
  }

  // `/assets/<feed>` and `/assets/<feed>/` (the router ignores the trailing '/') name the root.
  app.get("/assets/:feed", BROWSE_PAGE, browse);
  app.get("/assets/:feed/*", BROWSE_PAGE, browse);
  return pages;
}
