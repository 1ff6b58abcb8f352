/**
 * Templates of the webhooks pages. Every value is escaped (`<%= %>`); the `form` partial is the
 * same for create and edit.
 */
const FIELDS = `<label for="w-name">Name</label><input id="w-name" name="name" required maxlength="100" value="<%= it.form.name %>">
<label for="w-url">URL (may hold {feed} {group} {name} {version} {event} in its path and query)</label>
<input id="w-url" name="url" required value="<%= it.form.url %>">
<label for="w-method">Method</label>
<select id="w-method" name="method"><% for (const m of it.methods) { %><option<%= m === it.form.method ? " selected" : "" %>><%= m %></option><% } %></select>
<fieldset><legend>Events</legend>
<% for (const e of it.events) { %><label class="check"><input type="checkbox" name="events" value="<%= e %>"<%= it.form.events.includes(e) ? " checked" : "" %>> <%= e %></label><% } %>
</fieldset>
<label for="w-headers">Extra headers, one "Name: value" a line</label>
<textarea id="w-headers" name="headers" rows="3"><%= it.form.headers %></textarea>
<label for="w-secret">Signing secret (<%= it.secretHint %>)</label>
<input id="w-secret" name="secret" type="password" autocomplete="new-password">
<label class="check"><input type="checkbox" name="active" value="yes"<%= it.form.active ? " checked" : "" %>> Active</label>`;

export const WEBHOOKS = `<% layout("@layout") %>
<h1>Webhooks</h1>
<p class="muted">Each event is sent as a signed JSON body (X-Wharf-Signature), retried with backoff until the receiver answers 2xx.</p>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<% if (it.webhooks.length === 0) { %><p class="muted">There is no webhook you may manage.</p><% } else { %>
<table class="admin-table webhook-table">
<thead><tr><th scope="col">Name</th><th scope="col">Feed</th><th scope="col" class="wide">URL</th><th scope="col">Events</th><th scope="col">Active</th></tr></thead>
<tbody>
<% for (const w of it.webhooks) { %>
<tr><td><a href="<%= w.href %>"><%= w.name %></a></td><td><%= w.feed %></td><td class="wide"><%= w.method %> <%= w.url %></td><td><%= w.events %></td><td><%= w.active ? "yes" : "no" %></td></tr>
<% } %>
</tbody>
</table>
<% } %>
<h2 id="new-webhook">Create a webhook</h2>
<form method="post" action="/admin/webhooks" class="admin-form" aria-labelledby="new-webhook">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<label for="w-feed">Feed</label>
<select id="w-feed" name="feed">
<% if (it.canGlobal) { %><option value=""<%= it.form.feed === "" ? " selected" : "" %>>All feeds (global)</option><% } %>
<% for (const f of it.feeds) { %><option value="<%= f %>"<%= it.form.feed === f ? " selected" : "" %>><%= f %></option><% } %>
</select>
${FIELDS}
<p><button type="submit">Create webhook</button></p>
</form>
`;

export const WEBHOOK = `<% layout("@layout") %>
<p><a href="/admin/webhooks">Webhooks</a></p>
<h1>Webhook <%= it.webhook.name %></h1>
<% if (it.secret) { %><div class="webhook-notice" role="status"><p>The signing secret, shown this once (receivers verify X-Wharf-Signature with it):</p><p><code><%= it.secret %></code></p></div><% } %>
<% if (it.tested) { %><p class="<%= it.tested.state === "succeeded" ? "webhook-notice" : "error" %>" role="status">Test: <%= it.tested.state %>, <%= it.tested.answer %></p><% } %>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<dl class="facts">
<dt>Feed</dt><dd><%= it.webhook.feed %></dd>
<dt>Created</dt><dd><%= it.webhook.created %> by <%= it.webhook.createdBy %></dd>
</dl>
<form method="post" action="<%= it.webhook.href %>/test">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<button type="submit">Send a test event</button>
</form>
<h2 id="edit-webhook">Edit</h2>
<form method="post" action="<%= it.webhook.href %>/edit" class="admin-form" aria-labelledby="edit-webhook">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
${FIELDS}
<p><button type="submit">Save</button></p>
</form>
<form method="post" action="<%= it.webhook.href %>/delete">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<label class="check"><input type="checkbox" name="confirm" value="yes" required> Yes, delete it and its delivery log</label>
<button type="submit" class="danger">Delete <%= it.webhook.name %></button>
</form>
<h2>Deliveries</h2>
<% if (it.deliveries.length === 0) { %><p class="muted">Nothing was delivered yet.</p><% } else { %>
<table class="admin-table webhook-table">
<thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col" class="wide">Last answer</th><th scope="col">Next attempt</th></tr></thead>
<tbody>
<% for (const d of it.deliveries) { %>
<tr>
<td><%= d.created %></td><td><%= d.event %></td><td><%= d.state %></td><td><%= d.attempts %></td>
<td class="wide"><%= d.answer %><% if (d.url) { %><br><span class="muted"><%= d.url %></span><% } %>
<details><summary>Body <span class="visually-hidden">of delivery <%= d.id %></span></summary><pre><%= d.body %></pre></details></td>
<td><%= d.next %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
`;
