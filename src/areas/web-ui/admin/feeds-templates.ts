/** The feed form's fields (create and edit), shown again escaped when the service refuses them. */
const FEED_FIELDS = `
  <label for="feed-name">Name</label>
  <input id="feed-name" name="name" required maxlength="1000" value="<%= it.form.name %>">
  <% if (it.creating) { %>
  <label for="feed-type">Type</label>
  <select id="feed-type" name="feedType">
  <% for (const type of it.feedTypes) { %>
    <option value="<%= type %>"<% if (type === it.form.feedType) { %> selected<% } %>><%= type %></option>
  <% } %>
  </select>
  <% } %>
  <label for="feed-group">Feed group (optional)</label>
  <input id="feed-group" name="feedGroup" maxlength="1000" value="<%= it.form.feedGroup %>">
  <label for="feed-description">Description</label>
  <textarea id="feed-description" name="description" rows="3" maxlength="10000"><%= it.form.description %></textarea>
  <label for="feed-connectors">Connectors (names, comma-separated; universal feeds)</label>
  <input id="feed-connectors" name="connectors" value="<%= it.form.connectors %>">
`;

/** GET /admin/feeds: the feeds the viewer may manage, and the create form when they may create one. */
export const ADMIN_FEEDS = `<% layout("@layout") %>
<h1>Feeds</h1>
<% if (it.feeds.length === 0) { %>
<p class="muted">There is no feed you may manage.</p>
<% } else { %>
<table class="admin-table">
<thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col" class="wide">Group</th><th scope="col" class="wide">Description</th></tr></thead>
<tbody>
<% for (const feed of it.feeds) { %>
<tr><td><a href="<%= feed.url %>"><%= feed.name %></a></td><td><%= feed.type %></td><td class="wide"><%= feed.group %></td><td class="wide"><%= feed.description %></td></tr>
<% } %>
</tbody>
</table>
<% } %>
<% if (it.canCreate) { %>
<h2 id="create">Create a feed</h2>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<form method="post" action="/admin/feeds" class="admin-form" aria-labelledby="create">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  ${FEED_FIELDS}
  <p><button type="submit">Create feed</button></p>
</form>
<% } %>
`;

/** GET /admin/feeds/<name>: edit, storage (secrets never shown) and the move's state, delete. */
export const ADMIN_FEED = `<% layout("@layout") %>
<h1>Feed <%= it.feed.name %></h1>
<p><a href="<%= it.feed.browseUrl %>">Browse its packages</a><% if (it.feed.retentionUrl) { %> · <a href="<%= it.feed.retentionUrl %>">Retention</a><% } %> · <a href="/admin/feeds">All feeds</a></p>
<h2 id="edit">Settings</h2>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<form method="post" action="<%= it.feed.url %>" class="admin-form" aria-labelledby="edit">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  ${FEED_FIELDS}
  <p><button type="submit">Save</button></p>
</form>

<h2 id="storage">Storage</h2>
<dl class="facts">
  <dt>Store</dt><dd><%= it.storage.typeName %></dd>
  <% for (const p of it.storage.shown) { %><dt><%= p.name %></dt><dd><%= p.value %></dd><% } %>
  <dt>Move between stores</dt><dd><%= it.move %></dd>
</dl>
<% if (it.moveFailed) { %>
<form method="post" action="<%= it.feed.url %>/move">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <p><button type="submit">Retry the move</button></p>
</form>
<% } %>
<% if (it.storageMessage) { %><p class="error" role="alert"><%= it.storageMessage %></p><% } %>
<form method="post" action="<%= it.feed.url %>/storage" class="admin-form" aria-labelledby="storage-change">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <h3 id="storage-change">Change the store</h3>
  <label for="storage-type">Store</label>
  <select id="storage-type" name="storageType" data-admin-store-select>
  <% for (const type of it.storageTypes) { %>
    <option value="<%= type.id %>"<% if (type.id === it.storage.id) { %> selected<% } %>><%= type.name %></option>
  <% } %>
  </select>
  <% for (const type of it.storageTypes) { %>
  <fieldset data-admin-store="<%= type.id %>">
    <legend><%= type.name %> settings</legend>
    <% for (const p of type.properties) { %>
    <% if (p.boolean) { %>
    <label class="check"><input type="checkbox" name="<%= p.field %>" value="true"<% if (p.value === "true") { %> checked<% } %>> <%= p.name %></label>
    <% } else { %>
    <label for="<%= p.field %>"><%= p.name %><% if (p.secret) { %> (blank: keep the stored one)<% } %></label>
    <input id="<%= p.field %>" name="<%= p.field %>"<% if (p.secret) { %> type="password" autocomplete="new-password"<% } %> value="<%= p.value %>" placeholder="<%= p.placeholder %>">
    <% } %>
    <% } %>
  </fieldset>
  <% } %>
  <label class="check"><input type="checkbox" name="move" value="false"> New uploads only (do not move the stored packages)</label>
  <p><button type="submit">Change store</button></p>
</form>

<h2>Delete</h2>
<p><a class="button" href="<%= it.feed.url %>/delete">Delete this feed…</a></p>
`;

/** GET /admin/feeds/<name>/delete: the confirmation step. */
export const ADMIN_FEED_DELETE = `<% layout("@layout") %>
<h1>Delete feed <%= it.name %>?</h1>
<p>Its packages, API keys and permissions are deleted with it. This cannot be undone.</p>
<form method="post" action="<%= it.url %>/delete">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <button type="submit" class="danger">Delete feed <%= it.name %></button>
  <a href="<%= it.url %>">Cancel</a>
</form>
`;
