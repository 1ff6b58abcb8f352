/**
 * Templates of a feed's retention pages. Every value is escaped (`<%= %>`). `it.unit` is
 * "versions" or "files" (an asset directory).
 */

export const RETENTION = `<% layout("@layout") %>
<p><a href="<%= it.feed.adminUrl %>">Feed <%= it.feed.name %></a></p>
<h1>Retention of <%= it.feed.name %></h1>
<p class="muted">Rules apply in order, each to the <%= it.unit %> the earlier ones left. A preview lists what a run would delete now; deleting from it deletes exactly that list (anything changed since is skipped).</p>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<h2 id="rules">Rules</h2>
<p>Scheduled runs: <strong><%= it.schedule %></strong></p>
<% if (it.rules.length === 0) { %><p class="muted">No rule: retention deletes nothing.</p><% } else { %>
<ol class="retention-rules">
<% for (const rule of it.rules) { %><li><% for (const line of rule) { %><span><%= line %></span> <% } %></li><% } %>
</ol>
<% } %>
<form method="post" action="<%= it.pageUrl %>/preview">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<button type="submit">Preview a run</button>
</form>

<% if (it.preview) { %>
<h2 id="preview">Preview</h2>
<p role="status">A run would delete <strong><%= it.preview.count %></strong> of <%= it.preview.examined %> <%= it.unit %> (<%= it.preview.size %>), evaluated <%= it.preview.evaluated %>.</p>
<% if (it.preview.items.length > 0) { %>
<table class="admin-table retention-table">
<thead><tr><th scope="col" class="wide"><%= it.unit === "files" ? "File" : "Package" %></th><% if (it.unit !== "files") { %><th scope="col">Version</th><% } %><th scope="col">Rule</th><th scope="col" class="wide">Why</th><th scope="col">Last download</th><th scope="col">Age</th><th scope="col">Size</th></tr></thead>
<tbody>
<% for (const item of it.preview.items) { %>
<tr><td class="wide"><%= item.what %></td><% if (it.unit !== "files") { %><td><%= item.version %></td><% } %><td><%= item.rule %></td><td class="wide"><%= item.reason %></td><td><%= item.lastDownload %></td><td><%= item.age %></td><td><%= item.size %></td></tr>
<% } %>
</tbody>
</table>
<form method="post" action="<%= it.pageUrl %>/run">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<input type="hidden" name="token" value="<%= it.preview.token %>">
<button type="submit" class="danger"><%= it.preview.deleteLabel %></button>
</form>
<% } %>
<% } %>

<h2 id="runs">Runs</h2>
<% if (it.runs.length === 0) { %><p class="muted">No run yet.</p><% } else { %>
<table class="admin-table retention-table">
<thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Started by</th><th scope="col">Created</th><th scope="col">Deleted</th><th scope="col">Freed</th><th scope="col">Skipped</th></tr></thead>
<tbody>
<% for (const run of it.runs) { %>
<tr><td><a href="<%= run.href %>">#<%= run.id %></a></td><td><%= run.status %></td><td><%= run.by %></td><td><%= run.created %></td><td><%= run.deleted %></td><td><%= run.freed %></td><td><%= run.skipped %></td></tr>
<% } %>
</tbody>
</table>
<% } %>

<h2 id="edit-rules">Edit the rules</h2>
<form method="post" action="<%= it.pageUrl %>" class="admin-form" aria-labelledby="edit-rules">
<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
<label class="check"><input type="checkbox" name="enabled" value="yes"<%= it.form.enabled ? " checked" : "" %>> Run on the schedule</label>
<label for="r-schedule">Schedule (cron, UTC; e.g. <code>0 3 * * *</code>: every night at 03:00; blank: none)</label>
<input id="r-schedule" name="schedule" maxlength="200" value="<%= it.form.schedule %>">
<label for="r-rules">Rules, as the management API takes them (a JSON array; README "Retention")</label>
<textarea id="r-rules" name="rules" rows="12" spellcheck="false"><%= it.form.rules %></textarea>
<p><button type="submit">Save the rules</button></p>
</form>
`;

export const RETENTION_RUN = `<% layout("@layout") %>
<p><a href="<%= it.pageUrl %>">Retention of <%= it.feed %></a></p>
<h1>Retention run #<%= it.run.id %></h1>
<dl class="facts">
<dt>Status</dt><dd><%= it.run.status %></dd>
<dt>Started by</dt><dd><%= it.run.by %> (<%= it.run.trigger %>)</dd>
<dt>Created</dt><dd><%= it.run.created %></dd>
<dt>Finished</dt><dd><%= it.run.finished %></dd>
<dt>From a preview</dt><dd><%= it.run.fromPreview ? "yes: exactly its list" : "no: what the rules selected when it ran" %></dd>
<dt>Deleted</dt><dd><%= it.run.deleted %> <%= it.unit %>, <%= it.run.freed %></dd>
<dt>Skipped</dt><dd><%= it.run.skipped %></dd>
</dl>
<h2>Log</h2>
<% if (it.log.length === 0) { %><p class="muted">Nothing logged yet.</p><% } else { %>
<pre class="retention-log"><% for (const line of it.log) { %><%= line %>
<% } %></pre>
<% } %>
`;

/** Stylesheet rules of the retention pages (joined into /ui/style.css). */
export const RETENTION_STYLE = `
.retention-rules li span { display: inline; }
.retention-table + form { margin-top: .75rem; }
.retention-log { white-space: pre-wrap; overflow-wrap: anywhere; border: 1px solid var(--line); background: var(--panel); padding: .5rem; }
@media (max-width: 40rem) { .retention-table td, .retention-table th { overflow-wrap: anywhere; } }
`;
