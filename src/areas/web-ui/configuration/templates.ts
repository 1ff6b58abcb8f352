/**
 * Templates of the configuration pages (issue 16 section 1). Every value is escaped (`<%= %>`):
 * item keys, error texts, job names and log lines are whatever servers, roles and their owners
 * made them. Partials (`<%~ include %>`) print only what they escaped themselves. A part that is
 * still moving (a check running, a job pending) is marked `data-configuration-live`: the script
 * fetches the page again and swaps that part while so; without JavaScript, reloading shows it.
 */

/** A status word with its colour class; `it` is a StatusView. */
export const STATUS_BADGE = `<span class="config-status config-status-<%= it.status %>"><%= it.word %></span>`;

/** A table of servers, roles or environments with their status; `it`: { caption, rows, empty }. */
export const STATUS_TABLE = `<% if (it.rows.length === 0) { %>
<p class="muted"><%= it.empty %></p>
<% } else { %>
<table class="config-table">
<caption class="visually-hidden"><%= it.caption %></caption>
<thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col" class="wide">Last check</th><th scope="col">Details</th></tr></thead>
<tbody>
<% for (const row of it.rows) { %>
<tr>
  <td><a href="<%= row.url %>"><%= row.name %></a></td>
  <td><%~ include("@configuration-status-badge", row) %></td>
  <td class="wide"><%= row.lastCheck ?? "never" %></td>
  <td><% if (row.errorText) { %><span class="error"><%= row.errorText %></span><% } %><% if (row.remediation) { %> <a href="<%= row.remediation.url %>">remediation<% if (row.remediation.date) { %> at <%= row.remediation.date %><% } %></a><% } %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>`;

/** Remediation jobs; `it`: { jobs }. */
export const JOB_TABLE = `<% if (it.jobs.length === 0) { %>
<p class="muted">No remediation job yet.</p>
<% } else { %>
<table class="config-table">
<caption class="visually-hidden">Remediation jobs, newest first</caption>
<thead><tr><th scope="col">Job</th><th scope="col">Of</th><th scope="col">State</th><th scope="col" class="wide">Created</th></tr></thead>
<tbody>
<% for (const job of it.jobs) { %>
<tr>
  <td><a href="<%= job.url %>"><%= job.title %></a><% if (job.simulate) { %> <span class="tags">simulated</span><% } %></td>
  <td><%= job.entity.type %> <a href="<%= job.entity.url %>"><%= job.entity.name %></a></td>
  <td><span class="config-state config-state-<%= job.state %>"><%= job.word %></span></td>
  <td class="wide"><%= job.created %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>`;

/**
 * Check and remediate forms for one entity (shown only to those the API lets do it); `it`:
 * { check, remediate, csrfToken, what, remediates, form: { job, start, simulate }, message, notice }.
 */
export const ACTIONS = `<section class="config-actions" aria-labelledby="config-actions-title">
<h2 id="config-actions-title">Check and remediate</h2>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<% if (it.notice) { %><p role="status"><%= it.notice %></p><% } %>
<form method="post" action="<%= it.check %>">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <button type="submit">Check <%= it.what %> now</button>
</form>
<form method="post" action="<%= it.remediate %>" class="config-remediate">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <fieldset>
    <legend>Remediate <%= it.remediates %></legend>
    <label for="config-job-name">Job name (optional)</label>
    <input id="config-job-name" name="job" maxlength="200" value="<%= it.form.job %>">
    <label for="config-job-start">Not before (UTC, optional: empty is now)</label>
    <input id="config-job-start" name="start" type="datetime-local" step="1" value="<%= it.form.start %>">
    <label class="check"><input type="checkbox" name="simulate" value="true"<% if (it.form.simulate) { %> checked<% } %>> Simulate: report what would change, change nothing</label>
    <p><button type="submit">Remediate</button></p>
  </fieldset>
</form>
</section>`;

export const OVERVIEW = `<% layout("@layout") %>
<h1>Configuration</h1>
<div<% if (it.live) { %> data-configuration-live<% } %> id="config-live">
<section aria-labelledby="servers-title">
<h2 id="servers-title">Servers</h2>
<p><%= it.servers.length %> server<%= it.servers.length === 1 ? "" : "s" %><%= it.counts.length > 0 ? ", by status:" : "." %></p>
<% if (it.counts.length > 0) { %>
<ul class="config-counts" aria-label="Servers by status">
<% for (const count of it.counts) { %><li><span class="config-status config-status-<%= count.status %>"><%= count.word %></span> <%= count.count %></li><% } %>
</ul>
<% } %>
<%~ include("@configuration-status-table", { caption: "Servers", rows: it.servers, empty: "There is no server." }) %>
</section>
<section aria-labelledby="roles-title">
<h2 id="roles-title">Roles</h2>
<%~ include("@configuration-status-table", { caption: "Roles", rows: it.roles, empty: "There is no role." }) %>
</section>
<section aria-labelledby="environments-title">
<h2 id="environments-title">Environments</h2>
<%~ include("@configuration-status-table", { caption: "Environments", rows: it.environments, empty: "There is no environment." }) %>
</section>
<section aria-labelledby="jobs-title">
<h2 id="jobs-title">Remediation jobs</h2>
<%~ include("@configuration-job-table", { jobs: it.jobs }) %>
</section>
</div>
<% if (it.actions) { %>
<section class="config-actions" aria-labelledby="check-all-title">
<h2 id="check-all-title">Check every server</h2>
<% if (it.notice) { %><p role="status"><%= it.notice %></p><% } %>
<form method="post" action="/configuration/check">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <button type="submit">Check all servers now</button>
</form>
</section>
<% } %>
`;

/** A server, role or environment: its status, what it is made of, its jobs, the actions. */
export const ENTITY = `<% layout("@layout") %>
<p class="breadcrumbs"><a href="/configuration">Configuration</a> / <%= it.kind %></p>
<h1><%= it.status.name %></h1>
<div<% if (it.live) { %> data-configuration-live<% } %> id="config-live">
<dl class="facts">
  <dt>Status</dt><dd><%~ include("@configuration-status-badge", it.status) %></dd>
  <dt>Last check</dt><dd><%= it.status.lastCheck ?? "never" %></dd>
  <% if (it.status.errorText) { %><dt>Error</dt><dd class="error"><%= it.status.errorText %></dd><% } %>
  <% if (it.status.remediation) { %><dt>Remediation</dt><dd><a href="<%= it.status.remediation.url %>">pending<% if (it.status.remediation.date) { %>, not before <%= it.status.remediation.date %><% } %></a></dd><% } %>
  <% for (const link of it.links) { %>
  <dt><%= link.title %></dt><dd><% if (link.entries.length === 0) { %><span class="muted">none</span><% } %><% link.entries.forEach((entry, i) => { %><% if (i > 0) { %>, <% } %><a href="<%= entry.url %>"><%= entry.name %></a><% }) %></dd>
  <% } %>
</dl>
<% if (it.items) { %>
<section aria-labelledby="items-title">
<h2 id="items-title">Items</h2>
<% if (it.items.length === 0) { %>
<p class="muted">No completed check yet: check the server to see its items.</p>
<% } else { %>
<p class="muted"><%= it.drifted %> of <%= it.items.length %> items differ from the desired state.</p>
<div class="config-scroll">
<table class="config-table config-items">
<caption class="visually-hidden">Items of the last completed check</caption>
<thead><tr><th scope="col">Item</th><th scope="col">Status</th><th scope="col">What differs (desired → actual)</th></tr></thead>
<tbody>
<% for (const item of it.items) { %>
<tr class="config-item-<%= item.status %>">
  <td><span class="muted"><%= item.type %></span> <code><%= item.key %></code><% if (item.role) { %><br><span class="muted">role <a href="<%= item.roleUrl %>"><%= item.role %></a></span><% } %></td>
  <td><span class="config-status config-status-<%= item.status %>"><%= item.status %></span></td>
  <td>
  <% if (item.differences.length > 0) { %>
  <ul class="config-differences">
  <% for (const d of item.differences) { %><li><%= d.property %>: <code><%= d.desired %></code> → <code><%= d.actual %></code></li><% } %>
  </ul>
  <% } %>
  <% if (item.errorText) { %><span class="error"><%= item.errorText %></span><% } %>
  </td>
</tr>
<% } %>
</tbody>
</table>
</div>
<% } %>
</section>
<% } %>
<% if (it.checks) { %>
<section aria-labelledby="checks-title">
<h2 id="checks-title">Checks</h2>
<% if (it.checks.length === 0) { %>
<p class="muted">Never checked.</p>
<% } else { %>
<table class="config-table">
<caption class="visually-hidden">Recent checks, newest first</caption>
<thead><tr><th scope="col">Started</th><th scope="col">Result</th><th scope="col">Found</th><th scope="col" class="wide">Ended</th></tr></thead>
<tbody>
<% for (const check of it.checks) { %>
<tr>
  <td><%= check.started %><% if (check.jobUrl) { %><br><a href="<%= check.jobUrl %>">by a remediation</a><% } %></td>
  <td><span class="config-check config-check-<%= check.status %>"><%= check.word %></span></td>
  <td><% if (check.found) { %><%= check.found %><% } %><% if (check.errorText) { %><span class="error"><%= check.errorText %></span><% } %></td>
  <td class="wide"><%= check.ended ?? "" %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
</section>
<% } %>
<% if (it.servers) { %>
<section aria-labelledby="members-title">
<h2 id="members-title">Servers</h2>
<%~ include("@configuration-status-table", { caption: "Servers", rows: it.servers, empty: "No server has it." }) %>
</section>
<% } %>
<section aria-labelledby="jobs-title">
<h2 id="jobs-title">Remediation jobs</h2>
<%~ include("@configuration-job-table", { jobs: it.jobs }) %>
</section>
</div>
<% if (it.actions) { %><%~ include("@configuration-actions", { ...it.actions, csrfToken: it.csrfToken }) %><% } %>
`;

/** One remediation job and its log. */
export const JOB = `<% layout("@layout") %>
<p class="breadcrumbs"><a href="/configuration">Configuration</a> / remediation job</p>
<h1><%= it.job.title %></h1>
<div<% if (it.live) { %> data-configuration-live<% } %> id="config-live">
<dl class="facts">
  <dt>Of</dt><dd><%= it.job.entity.type %> <a href="<%= it.job.entity.url %>"><%= it.job.entity.name %></a></dd>
  <dt>State</dt><dd><span class="config-state config-state-<%= it.job.state %>"><%= it.job.word %></span><% if (it.job.simulate) { %> (simulated: nothing is changed)<% } %></dd>
  <dt>Created</dt><dd><%= it.job.created %></dd>
  <% if (it.job.notBefore) { %><dt>Not before</dt><dd><%= it.job.notBefore %></dd><% } %>
  <% if (it.job.started) { %><dt>Started</dt><dd><%= it.job.started %></dd><% } %>
  <% if (it.job.ended) { %><dt>Ended</dt><dd><%= it.job.ended %></dd><% } %>
</dl>
<h2 id="log-title">Log</h2>
<% if (it.log.length === 0) { %>
<p class="muted">Nothing logged yet.</p>
<% } else { %>
<ol class="config-log" aria-labelledby="log-title">
<% for (const line of it.log) { %><li class="config-log-<%= line.level %>"><span class="muted"><%= line.time %></span> <strong><%= line.level %></strong> <span class="config-log-message"><%= line.message %></span></li><% } %>
</ol>
<% } %>
</div>
`;
