import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, sendNotFound } from "../pages/access.js";
import { formatDate } from "../pages/present.js";
import { defineView, sendPage } from "../views.js";
import { backTo, idParam } from "../form.js";

const ACCOUNT = `<% layout("@layout") %>
<h1>Your account</h1>
<dl class="facts">
  <dt>User name</dt><dd><%= it.user %></dd>
  <dt>Groups</dt><dd><%= it.groups.length ? it.groups.join(", ") : "none" %></dd>
</dl>
<p class="muted">Wharf's security API lets only an administrator set a password: ask one to change yours.
Changing it signs out every browser signed in with the old one.</p>
<h2 id="sessions">Where you are signed in</h2>
<table class="admin-table">
<thead><tr><th scope="col">Browser</th><th scope="col" class="wide">Address</th><th scope="col" class="wide">Signed in</th><th scope="col">Last seen</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
<% for (const s of it.sessions) { %>
<tr>
  <td><%= s.userAgent %><% if (s.current) { %> <strong>(this browser)</strong><% } %></td>
  <td class="wide"><%= s.address %></td>
  <td class="wide"><%= s.createdAt %></td>
  <td><%= s.lastSeenAt %></td>
  <td><% if (!s.current) { %>
    <form method="post" action="/account/sessions/<%= s.id %>/revoke">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <button type="submit" class="danger" aria-label="Sign out the session signed in at <%= s.createdAt %>">Sign out</button>
    </form>
  <% } %></td>
</tr>
<% } %>
</tbody>
</table>
<% if (it.sessions.length > 1) { %>
<form method="post" action="/account/sessions/revoke-others">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <p><button type="submit" class="danger">Sign out every other browser</button></p>
</form>
<% } %>
`;
const ACCOUNT_VIEW = defineView("admin-account", ACCOUNT);

/** The signed-in user and their session id, or undefined when the request is not a session's. */
function signedIn(request: FastifyRequest): { userId: number; userName: string; sessionId: number } | undefined {
  const principal = request.principal;
  const sessionId = request.session?.id;
  if (principal?.type !== "user" || sessionId === undefined) return undefined;
  return { userId: principal.userId, userName: principal.userName, sessionId };
}

/**
 * GET /account: who I am and where I am signed in (my own sessions only, from the session rows),
 * with sign-out of one other session or of every other. Needs only a signed-in session: a user
 * acts on their own rows, bound to their user id in every statement (session-store.ts), so a forged
 * id of someone else's session ends nothing. Basic credentials on a UI route (no session) are sent
 * to sign in: there is no "this browser" to keep.
 */
export function registerAccountPage(app: FastifyInstance, { sessions, security }: WebUiDeps): void {
  const store = sessions.store;
  const refuseUnsigned = (request: FastifyRequest, reply: FastifyReply) =>
    reply.redirect(`/sign-in?next=${encodeURIComponent("/account")}`, 303);

  app.get("/account", BROWSE_PAGE, async (request, reply) => {
    const me = signedIn(request);
    if (me === undefined) return refuseUnsigned(request, reply);
    const user = (await security.users.listUsers(me.userName)).find((u) => u.name === me.userName);
    return sendPage(request, reply, ACCOUNT_VIEW, {
      title: "Your account",
      groups: user?.groups ?? [],
      sessions: (await store.listOf(me.userId)).map((s) => ({
        id: s.id,
        current: s.id === me.sessionId,
        userAgent: s.userAgent ?? "Unknown browser",
        address: s.address ?? "",
        createdAt: formatDate(s.createdAt),
        lastSeenAt: formatDate(s.lastSeenAt),
      })),
    });
  });

  app.post("/account/sessions/:id/revoke", BROWSE_PAGE, async (request, reply) => {
    const me = signedIn(request);
    if (me === undefined) return refuseUnsigned(request, reply);
    const id = idParam(request);
    if (id === undefined || !(await store.endOne(me.userId, id))) {
      return sendNotFound(request, reply, "You have no session with this id.");
    }
    request.log.info({ user: me.userName, session: id }, "web UI session ended from the account page");
    return backTo(reply, "/account");
  });

  app.post("/account/sessions/revoke-others", BROWSE_PAGE, async (request, reply) => {
    const me = signedIn(request);
    if (me === undefined) return refuseUnsigned(request, reply);
    const ended = await store.endOthers(me.userId, me.sessionId);
    request.log.info({ user: me.userName, ended }, "other web UI sessions ended from the account page");
    return backTo(reply, "/account");
  });
}
