import { createHash } from "node:crypto";
import { Eta } from "eta";
import type { FastifyReply, FastifyRequest } from "fastify";
import { SCRIPT } from "./assets/script.js";
import { STYLE } from "./assets/style.js";
import { LAYOUT } from "./templates/layout.js";
import { SNIPPETS } from "./templates/snippets.js";

/**
 * Server-rendered pages (issue 16): Eta templates held as TypeScript strings (compiled with the
 * sources, nothing to copy at build time), escaping every interpolation by default. A page
 * registers its template once with `defineView` and answers with `sendPage`.
 */
const views = new Eta({ autoEscape: true, cache: true, autoTrim: false });
views.loadTemplate("@layout", LAYOUT);
// Partials, included by pages with `<%~ include("@name", data) %>` (their output is escaped already).
views.loadTemplate("@snippets", SNIPPETS);

/** Changes whenever the CSS or script does, so that browsers may cache them for a year. */
export const ASSET_VERSION = createHash("sha256").update(STYLE).update(SCRIPT).digest("hex").slice(0, 12);

/** Registers a page template; it starts with `<% layout("@layout") %>` to get the frame. */
export function defineView(name: string, source: string): string {
  const id = `@${name}`;
  views.loadTemplate(id, source);
  return id;
}

/** What the frame needs from every request: who is signed in and the form token for signing out. */
export interface FrameData {
  readonly user: string | undefined;
  readonly csrfToken: string | undefined;
}

/**
 * The signed-in user's name (a session's principal is a user) and a CSRF token when the session
 * plugin is registered (it decorates the reply with generateCsrf).
 */
export function frameData(request: FastifyRequest, reply: FastifyReply): FrameData {
  const principal = request.principal;
  const user = principal?.type === "user" ? principal.userName : undefined;
  const generate = (reply as unknown as { generateCsrf?: () => string }).generateCsrf;
  return { user, csrfToken: user !== undefined && generate ? generate.call(reply) : undefined };
}

/** `view` rendered inside the frame. */
export function renderPage(
  request: FastifyRequest,
  reply: FastifyReply,
  view: string,
  data: { readonly title: string } & Record<string, unknown>,
): string {
  return views.render(view, { ...data, ...frameData(request, reply), assetVersion: ASSET_VERSION });
}

/** Renders `view` inside the frame and sends it as HTML. */
export function sendPage(
  request: FastifyRequest,
  reply: FastifyReply,
  view: string,
  data: { readonly title: string } & Record<string, unknown>,
) {
  const html = renderPage(request, reply, view, data);
  return reply.type("text/html; charset=utf-8").header("Cache-Control", "no-store").send(html);
}
