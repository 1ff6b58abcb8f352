/**
 * GET /admin/api-keys (and the create form shown again with its error): every key with what it
 * may do, never the key or its hash; a Revoke form per key; a form to create one. Every value
 * escaped (display names and descriptions are whatever an administrator typed).
 */
export const API_KEYS = `<% layout("@layout") %>
<h1>API keys</h1>
<% if (it.keys.length === 0) { %>
<p class="muted">There is no API key.</p>
<% } else { %>
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">May use</th><th scope="col" class="wide">Expires</th><th scope="col" class="wide">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
<% for (const key of it.keys) { %>
<tr>
  <td><%= key.name %><% if (key.description) { %><br><span class="muted"><%= key.description %></span><% } %></td>
  <td><%= key.type %></td>
  <td><%= key.scope %></td>
  <td class="wide"><%= key.expires %></td>
  <td class="wide"><%= key.lastUsed %></td>
  <td>
    <form method="post" action="/admin/api-keys/<%= key.id %>/revoke">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <button type="submit" class="danger" aria-label="Revoke <%= key.name %>">Revoke</button>
    </form>
  </td>
</tr>
<% } %>
</tbody>
</table>
<% } %>

<h2 id="create">Create an API key</h2>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<form method="post" action="/admin/api-keys" class="api-key-form" aria-labelledby="create">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <label for="key-type">Type</label>
  <select id="key-type" name="type">
  <% for (const type of it.types) { %>
    <option value="<%= type %>"<% if (type === it.form.type) { %> selected<% } %>><%= type %></option>
  <% } %>
  </select>
  <label for="key-name">Display name</label>
  <input id="key-name" name="displayName" maxlength="1000" value="<%= it.form.displayName %>">
  <label for="key-description">Description</label>
  <input id="key-description" name="description" maxlength="10000" value="<%= it.form.description %>">
  <label for="key-expiration">Expires on (optional)</label>
  <input id="key-expiration" name="expiration" type="date" value="<%= it.form.expiration %>">

  <fieldset>
    <legend>System key: the APIs it may use</legend>
    <% for (const api of it.systemApis) { %>
    <label class="check"><input type="checkbox" name="systemApis" value="<%= api %>"<% if (it.form.systemApis.includes(api)) { %> checked<% } %>> <%= api %></label>
    <% } %>
  </fieldset>

  <fieldset>
    <legend>Feed key: one feed or one feed group, and what it may do there</legend>
    <label for="key-feed">Feed</label>
    <select id="key-feed" name="feed">
      <option value="">(none)</option>
    <% for (const feed of it.feeds) { %>
      <option value="<%= feed %>"<% if (feed === it.form.feed) { %> selected<% } %>><%= feed %></option>
    <% } %>
    </select>
    <label for="key-feed-group">or feed group</label>
    <input id="key-feed-group" name="feedGroup" maxlength="1000" value="<%= it.form.feedGroup %>">
    <% for (const permission of it.packagePermissions) { %>
    <label class="check"><input type="checkbox" name="packagePermissions" value="<%= permission %>"<% if (it.form.packagePermissions.includes(permission)) { %> checked<% } %>> <%= permission %></label>
    <% } %>
  </fieldset>

  <fieldset>
    <legend>Personal key: the user it acts as</legend>
    <label for="key-user">User name</label>
    <input id="key-user" name="user" maxlength="256" value="<%= it.form.user %>">
  </fieldset>

  <p><button type="submit">Create key</button></p>
</form>
`;

/** POST /admin/api-keys answered: the new key, shown this once. */
export const API_KEY_CREATED = `<% layout("@layout") %>
<h1>API key created</h1>
<p><strong>Copy the key now: it will not be shown again.</strong> Wharf keeps only its hash.</p>
<h2 id="new-key-label"><%= it.name %> (<%= it.type %>)</h2>
<div class="snippet">
<pre><code id="new-key"><%= it.key %></code></pre>
<button type="button" data-copy="new-key" aria-describedby="new-key-label" hidden>Copy</button>
</div>
<p><a href="/admin/api-keys">All API keys</a></p>
`;
