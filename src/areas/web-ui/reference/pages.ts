import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { evaluatePreconditions } from "../../../http/send-blob.js";
import {
  type ReferenceContent,
  renderListPage,
  renderMethodPage,
  renderNotFoundPage,
} from "../../native/reference-page.js";
import type { NativeRegistry } from "../../native/registry.js";
import { defineView, renderPage } from "../views.js";

/**
 * The reference's content comes escaped from native/reference-page.ts (its `markup` template escapes
 * every registry text), so the page inserts it as it is, inside the frame.
 */
const REFERENCE_VIEW = defineView(
  "reference-page",
  `<% layout("@layout") %>
<div class="reference"><%~ it.content %></div>
`,
);

/**
 * Public like Inedo's reference (it names methods, nothing more; the JSON transport answers 404 to
 * unknown ones before any key is checked). `ui` so that a signed-in reader's session shows in the
 * frame; `public` so that nobody is sent to sign in.
 */
const REFERENCE_PAGE = { config: { ui: true, access: { public: true as const } } };

/**
 * Every page carries the frame, which names the signed-in reader and holds their sign-out form's
 * token: the page is per reader, so no shared cache may keep it (`private`). It is revalidated each
 * time (`no-cache`) against an ETag of exactly the bytes that would be sent: a reader without a
 * session gets the same bytes until Wharf changes, hence a 304; a signed-in reader's page holds a
 * fresh form token each time, so it is simply sent again (small, and always right).
 */
const CACHE_CONTROL = "private, no-cache";

function etagOf(body: string): string {
  return createHash("sha256").update(body).digest("base64url").slice(0, 27);
}

function sendReference(
  request: FastifyRequest,
  reply: FastifyReply,
  content: ReferenceContent,
  status: 200 | 404 = 200,
): FastifyReply {
  const html = renderPage(request, reply, REFERENCE_VIEW, { title: content.title, content: content.body });
  reply.type("text/html; charset=utf-8").header("Cache-Control", CACHE_CONTROL);
  if (status !== 200) return reply.code(status).send(html);
  const etag = etagOf(html);
  reply.header("ETag", `"${etag}"`);
  const ifNoneMatch = request.headers["if-none-match"];
  if (
    ifNoneMatch !== undefined &&
    evaluatePreconditions(request.method, { ifNoneMatch }, { etag, lastModified: undefined }) === "not-modified"
  ) {
    return reply.code(304).send();
  }
  return reply.code(200).send(html);
}

/**
 * `GET|HEAD /reference/api` and `/reference/api/<Method>` (method names in any letter case). The
 * registry is fixed once the app starts, so every page's content is rendered once here; only the
 * frame around it is rendered per request.
 */
export function registerReferenceRoutes(app: FastifyInstance, registry: NativeRegistry): void {
  const list = renderListPage(registry.methods);
  const byMethod = new Map(registry.methods.map((m) => [m, renderMethodPage(m)]));
  const notFound = renderNotFoundPage();

  app.get("/reference/api", REFERENCE_PAGE, async (request, reply) => sendReference(request, reply, list));
  app.get("/reference/api/:method", REFERENCE_PAGE, async (request, reply) => {
    const { method: name } = request.params as { method: string };
    const method = registry.find(name);
    const content = method === undefined ? undefined : byMethod.get(method);
    return content === undefined
      ? sendReference(request, reply, notFound, 404)
      : sendReference(request, reply, content);
  });
}
