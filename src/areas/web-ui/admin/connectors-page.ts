import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { MANAGE_CONNECTORS } from "../../../domain/principal.js";
import type { ConnectorInput } from "../../connectors/schemas.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView } from "../pages/access.js";
import { formatDate } from "../pages/present.js";
import { defineView, sendPage } from "../views.js";
import { backTo, type FormFields, formFields, orRefused, splitList } from "../form.js";

const CONNECTORS = `<% layout("@layout") %>
<h1>Connectors</h1>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<% if (it.connectors.length === 0) { %><p class="muted">There is no connector.</p><% } else { %>
<table class="admin-table">
<thead><tr><th scope="col">Name</th><th scope="col" class="wide">URL</th><th scope="col">Health</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
<% for (const c of it.connectors) { %>
<tr>
  <td><%= c.name %></td><td class="wide"><%= c.url %></td>
  <td><%= c.health %><% if (c.error) { %><br><span class="muted"><%= c.error %></span><% } %></td>
  <td>
    <form method="post" action="/admin/connectors/check">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <input type="hidden" name="name" value="<%= c.name %>">
      <button type="submit">Check now<span class="visually-hidden"> <%= c.name %></span></button>
    </form>
    <details><summary>Edit <span class="visually-hidden"><%= c.name %></span></summary>
    <form method="post" action="/admin/connectors/edit" class="admin-form">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <input type="hidden" name="current" value="<%= c.name %>">
      <label>Name <input name="name" required value="<%= c.name %>"></label>
      <label>URL <input name="url" type="url" required value="<%= c.url %>"></label>
      <label>User name <input name="username" value="<%= c.username %>"></label>
      <label>Password (blank: unchanged) <input name="password" type="password" autocomplete="new-password"></label>
      <label>Filters (comma-separated) <input name="filters" value="<%= c.filters %>"></label>
      <button type="submit">Save <%= c.name %></button>
    </form>
    <form method="post" action="/admin/connectors/delete">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <input type="hidden" name="name" value="<%= c.name %>">
      <label class="check"><input type="checkbox" name="confirm" value="yes" required> Yes, delete</label>
      <button type="submit" class="danger">Delete <%= c.name %></button>
    </form>
    </details>
  </td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
<h2 id="new-connector">Create a connector</h2>
<form method="post" action="/admin/connectors" class="admin-form" aria-labelledby="new-connector">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <label for="c-name">Name</label><input id="c-name" name="name" required value="<%= it.form.name %>">
  <label for="c-url">URL of the remote feed</label><input id="c-url" name="url" type="url" required value="<%= it.form.url %>">
  <label for="c-user">User name (optional)</label><input id="c-user" name="username" value="<%= it.form.username %>">
  <label for="c-password">Password (optional)</label><input id="c-password" name="password" type="password" autocomplete="new-password">
  <label for="c-filters">Filters (comma-separated)</label><input id="c-filters" name="filters" value="<%= it.form.filters %>">
  <p><button type="submit">Create connector</button></p>
</form>
`;
const CONNECTORS_VIEW = defineView("admin-connectors", CONNECTORS);

const EMPTY_FORM = { name: "", url: "", username: "", filters: "" };

/** The form as the connectors API's body; a blank password is left out (the stored one is kept). */
function inputOf(f: FormFields): ConnectorInput {
  const password = f.text("password");
  return {
    name: f.text("name"),
    url: f.text("url"),
    username: f.text("username"),
    filters: splitList(f.text("filters")),
    ...(password === "" ? {} : { password }),
  };
}

/**
 * Connectors through the connectors API's ConnectorService, with its need (MANAGE_CONNECTORS) on
 * the page and every action. Passwords are never rendered (the service keeps them sealed).
 */
export function registerConnectorsPage(app: FastifyInstance, { connectors }: WebUiDeps): void {
  async function show(request: FastifyRequest, reply: FastifyReply, form = EMPTY_FORM, message?: string) {
    const all = await connectors.listConnectors();
    return sendPage(request, reply, CONNECTORS_VIEW, {
      title: "Connectors",
      connectors: all.map((c) => ({
        name: c.name,
        url: c.url,
        username: c.username ?? "",
        filters: c.filters.join(", "),
        health:
          c.health.lastChecked === undefined
            ? c.health.state
            : `${c.health.state} (checked ${formatDate(c.health.lastChecked)})`,
        error: c.health.errorMessage ?? "",
      })),
      form,
      message,
    });
  }

  app.get("/admin/connectors", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, MANAGE_CONNECTORS))) return reply;
    return show(request, reply);
  });

  const action = (url: string, run: (f: FormFields) => Promise<unknown>) =>
    app.post(url, BROWSE_PAGE, async (request, reply) => {
      if (!(await requireView(request, reply, MANAGE_CONNECTORS))) return reply;
      const f = formFields(request.body);
      const form = {
        name: f.text("name"),
        url: f.text("url"),
        username: f.text("username"),
        filters: f.text("filters"),
      };
      const done = await orRefused(
        reply,
        () => run(f),
        (message) => show(request, reply, form, message),
      );
      if (done === undefined) return reply;
      request.log.info({ action: url, connector: f.text("name") }, "connector changed in the web UI");
      return backTo(reply, "/admin/connectors");
    });
  action("/admin/connectors", (f) => connectors.createConnector({ ...inputOf(f), feedType: "universal" }));
  action("/admin/connectors/edit", (f) => connectors.updateConnector(f.text("current"), inputOf(f)));
  action("/admin/connectors/delete", (f) => connectors.deleteConnector(f.text("name")));
  // What POST /api/management/connectors/check/<name> does: fetch the upstream now, store the result.
  action("/admin/connectors/check", (f) => connectors.checkHealth(f.text("name")));
}
