import type { FastifyReply, FastifyRequest } from "fastify";
import type { AccessNeed } from "../../../domain/principal.js";
import { STATUS } from "../templates/status.js";
import { defineView, sendPage } from "../views.js";

export const STATUS_VIEW = defineView("status", STATUS);

/**
 * Route options of a browsing page: the session cookie authenticates it (`ui`, the SESSIONS part),
 * and the handler decides access with `requireView`, through request.can as the APIs do. Held in a
 * variable (not written inline) so that TypeScript accepts `ui` before its augmentation lands.
 */
export const BROWSE_PAGE = { config: { ui: true, access: { inHandler: true as const } } };

/**
 * Whether the viewer holds `need`; when not, the answer is sent: Anonymous is sent to sign in
 * (303, coming back here after), a signed-in viewer gets a 403 page. Asked before a feed is looked
 * up, so that a feed the viewer may not see and a feed that does not exist look the same, as on
 * the APIs (their need is checked before the feed is read).
 */
export async function requireView(request: FastifyRequest, reply: FastifyReply, need: AccessNeed): Promise<boolean> {
  if (await request.can(need)) return true;
  if (request.principal.type === "anonymous") {
    await reply.redirect(`/sign-in?next=${encodeURIComponent(request.url)}`, 303);
  } else {
    await sendStatus(request, reply, 403, "Forbidden", "You may not view this page.");
  }
  return false;
}

export function sendStatus(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  title: string,
  message: string,
) {
  return sendPage(request, reply.code(status), STATUS_VIEW, { title, message });
}

export function sendNotFound(request: FastifyRequest, reply: FastifyReply, message: string) {
  return sendStatus(request, reply, 404, "Not found", message);
}
