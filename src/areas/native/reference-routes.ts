import { createHash } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { evaluatePreconditions } from "../../http/send-blob.js";
import { renderListPage, renderMethodPage, renderNotFoundPage, STYLE_HASH } from "./reference-page.js";
import type { NativeRegistry } from "./registry.js";

/**
 * `GET|HEAD /reference/api` and `/reference/api/<Method>` (method names in any letter case): the
 * native API reference, public like Inedo's (it names methods, nothing more; the JSON transport
 * already answers 404 to unknown ones before any key is checked). The registry is fixed once the
 * app starts, so every page is rendered once here with its ETag: the pages change only with the
 * code, and a revalidation costs a 304.
 */
export interface ReferenceRoutesOptions {
  readonly registry: NativeRegistry;
}

interface RenderedPage {
  readonly body: string;
  readonly etag: string;
}

/** Nothing but the one stylesheet: no script, image, frame, form or base may come from anywhere. */
export const REFERENCE_CSP = [
  "default-src 'none'",
  `style-src ${STYLE_HASH}`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Cached briefly, then revalidated by ETag: a Wharf upgrade shows within minutes. */
const CACHE_CONTROL = "public, max-age=300";

function page(body: string): RenderedPage {
  return { body, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` };
}

function sendPage(request: FastifyRequest, reply: FastifyReply, rendered: RenderedPage, status = 200): FastifyReply {
  reply
    .header("Content-Security-Policy", REFERENCE_CSP)
    .header("X-Content-Type-Options", "nosniff")
    .header("Referrer-Policy", "no-referrer")
    .type("text/html; charset=utf-8");
  if (status !== 200) return reply.header("Cache-Control", "no-cache").code(status).send(rendered.body);
  reply.header("Cache-Control", CACHE_CONTROL).header("ETag", rendered.etag);
  const ifNoneMatch = request.headers["if-none-match"];
  if (
    ifNoneMatch !== undefined &&
    evaluatePreconditions(
      request.method,
      { ifNoneMatch },
      { etag: rendered.etag.slice(1, -1), lastModified: undefined },
    ) === "not-modified"
  ) {
    return reply.code(304).send();
  }
  return reply.code(200).send(rendered.body);
}

export const referenceRoutes: FastifyPluginAsync<ReferenceRoutesOptions> = async (app, { registry }) => {
  const list = page(renderListPage(registry.methods));
  const byMethod = new Map(registry.methods.map((m) => [m, page(renderMethodPage(m))]));
  const notFound = page(renderNotFoundPage());
  const options = { schema: { hide: true }, config: { access: { public: true } } } as const;

  app.get("/reference/api", options, async (request, reply) => sendPage(request, reply, list));
  app.get("/reference/api/:method", options, async (request, reply) => {
    const { method: name } = request.params as { method: string };
    const method = registry.find(name);
    const rendered = method === undefined ? undefined : byMethod.get(method);
    return rendered === undefined ? sendPage(request, reply, notFound, 404) : sendPage(request, reply, rendered);
  });
};
