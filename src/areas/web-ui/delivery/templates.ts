/**
 * The delivery pages' templates. Every value goes through `<%= %>` (escaped): application, release
 * and build names, variables and log lines are whatever a CI job or a user sent. Forms carry the
 * session's `_csrf`; buttons appear only when the viewer holds the API's need for the action
 * (`it.can`, decided by the page's handler).
 */

const CSRF = `<input type="hidden" name="_csrf" value="<%= it.csrfToken %>">`;
const MESSAGE = `<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>`;
const STATE = (value: string) => `<span class="state state-<%= ${value} %>"><%= ${value} %></span>`;

/** The badge builder (`it.badge`: image, link, snippets), shared by the application and build pages. */
export const BADGE_BUILDER = `<section aria-labelledby="badge-heading">
<h2 id="badge-heading">Badge</h2>
<p>The status of the newest matching build's latest deployment; the link leads to this page.
Readers of a README see the image only if they may read the CI badges API (e.g. Anonymous granted it).</p>
<p><a href="<%= it.badge.link %>"><img class="badge" src="<%= it.badge.preview %>" alt="Build status badge"></a></p>
<%~ include("@snippets", { snippets: it.badge.snippets }) %>
</section>
`;

export const APPLICATIONS = `<% layout("@layout") %>
<h1>Applications</h1>
<% if (it.applications.length === 0) { %>
<p class="muted">There is no application.</p>
<% } else { %>
<table>
<thead><tr><th scope="col">Name</th><th scope="col" class="wide">Group</th><th scope="col" class="num">Active releases</th><th scope="col">State</th></tr></thead>
<tbody>
<% for (const app of it.applications) { %>
<tr>
  <td><a href="<%= app.url %>"><%= app.name %></a><% if (app.description) { %><br><span class="muted"><%= app.description %></span><% } %></td>
  <td class="wide"><%= app.group %></td>
  <td class="num"><%= app.activeReleases %></td>
  <td><%= app.active ? "active" : "inactive" %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
`;

const BUILD_ROWS = `<table>
<thead><tr><th scope="col">Build</th><th scope="col">Release</th><th scope="col">Furthest stage</th><th scope="col">Status</th><th scope="col" class="wide">Created</th></tr></thead>
<tbody>
<% for (const build of it.builds) { %>
<tr>
  <td><a href="<%= build.url %>"><%= build.number %></a></td>
  <td><% if (build.releaseUrl) { %><a href="<%= build.releaseUrl %>"><%= build.release %></a><% } %></td>
  <td><%= build.stage %></td>
  <td>${STATE("build.status")}</td>
  <td class="wide"><%= build.created %></td>
</tr>
<% } %>
</tbody>
</table>`;

const CREATE_BUILD = `<% if (it.createBuild) { %>
<form method="post" action="<%= it.createBuild.action %>" class="delivery-action">
${CSRF}
<fieldset>
<legend>Create a build</legend>
<% if (it.createBuild.releases) { %>
<label for="build-release">Release</label>
<select id="build-release" name="releaseNumber">
<% if (it.createBuild.pipelines) { %><option value="">(no release)</option><% } %>
<% for (const number of it.createBuild.releases) { %><option value="<%= number %>"><%= number %></option><% } %>
</select>
<% } %>
<% if (it.createBuild.pipelines) { %>
<label for="build-pipeline">Pipeline (without a release)</label>
<select id="build-pipeline" name="pipelineName">
<option value="">(the release's)</option>
<% for (const name of it.createBuild.pipelines) { %><option value="<%= name %>"><%= name %></option><% } %>
</select>
<% } %>
<label for="build-number">Build number <span class="muted">(optional: the application's scheme picks one)</span></label>
<input id="build-number" name="buildNumber" maxlength="50">
<button type="submit">Create build</button>
</fieldset>
</form>
<% } %>`;

export const APPLICATION = `<% layout("@layout") %>
<p class="crumbs"><a href="/applications">Applications</a></p>
<h1><%= it.application.name %></h1>
${MESSAGE}
<dl class="facts">
<% if (it.application.description) { %><dt>Description</dt><dd><%= it.application.description %></dd><% } %>
<% if (it.application.groupName) { %><dt>Group</dt><dd><%= it.application.groupName %></dd><% } %>
<dt>Releases</dt><dd><%= it.application.releaseUsage %></dd>
<dt>Build numbers</dt><dd><%= it.application.buildNumberScheme %></dd>
</dl>
<h2>Releases</h2>
<% if (it.releases.length === 0) { %><p class="muted">No release yet.</p><% } else { %>
<table>
<thead><tr><th scope="col">Release</th><th scope="col" class="wide">Name</th><th scope="col">Pipeline</th><th scope="col">Status</th><th scope="col" class="wide">Created</th></tr></thead>
<tbody>
<% for (const release of it.releases) { %>
<tr>
  <td><a href="<%= release.url %>"><%= release.number %></a></td>
  <td class="wide"><%= release.name %></td>
  <td><%= release.pipeline %></td>
  <td>${STATE("release.status")}</td>
  <td class="wide"><%= release.created %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
<% if (it.createRelease) { %>
<form method="post" action="<%= it.createRelease.action %>" class="delivery-action">
${CSRF}
<fieldset>
<legend>Create a release</legend>
<label for="release-number">Release number</label>
<input id="release-number" name="releaseNumber" required maxlength="50">
<label for="release-pipeline">Pipeline</label>
<select id="release-pipeline" name="pipelineName" required>
<% for (const name of it.createRelease.pipelines) { %><option value="<%= name %>"><%= name %></option><% } %>
</select>
<button type="submit">Create release</button>
</fieldset>
</form>
<% } %>
<h2>Recent builds</h2>
<% if (it.builds.length === 0) { %><p class="muted">No build yet.</p><% } else { %>
${BUILD_ROWS}
<% } %>
${CREATE_BUILD}
${BADGE_BUILDER}`;

export const RELEASE = `<% layout("@layout") %>
<p class="crumbs"><a href="/applications">Applications</a> / <a href="<%= it.applicationUrl %>"><%= it.release.applicationName %></a></p>
<h1>Release <%= it.release.number %></h1>
${MESSAGE}
<dl class="facts">
<dt>Name</dt><dd><%= it.release.name %></dd>
<dt>Status</dt><dd>${STATE("it.release.status")}</dd>
<dt>Pipeline</dt><dd><%= it.release.pipelineName ?? "(none)" %></dd>
<dt>Created</dt><dd><%= it.created %> by <%= it.release.createdBy %></dd>
<% if (it.canceled) { %><dt>Canceled</dt><dd><%= it.canceled %> by <%= it.release.canceledBy %></dd><% } %>
</dl>
<% if (it.stages.length > 0) { %>
<h2>Pipeline stages</h2>
<ol class="stages">
<% for (const stage of it.stages) { %><li><span><%= stage.name %></span><% if (stage.environment) { %> <span class="muted"><%= stage.environment %></span><% } %></li><% } %>
</ol>
<% } %>
<% if (it.cancelAction || it.restoreAction) { %>
<form method="post" action="<%= it.cancelAction ?? it.restoreAction %>" class="delivery-action">
${CSRF}
<% if (it.cancelAction) { %>
<label for="cancel-reason">Reason <span class="muted">(optional)</span></label>
<input id="cancel-reason" name="reason" maxlength="200">
<button type="submit" class="danger">Cancel release</button>
<% } else { %>
<button type="submit">Restore release</button>
<% } %>
</form>
<% } %>
<h2>Builds</h2>
<% if (it.builds.length === 0) { %><p class="muted">No build yet.</p><% } else { %>
${BUILD_ROWS}
<% } %>
${CREATE_BUILD}`;

export const BUILD = `<% layout("@layout") %>
<p class="crumbs"><a href="/applications">Applications</a> / <a href="<%= it.applicationUrl %>"><%= it.build.applicationName %></a><% if (it.releaseUrl) { %> / <a href="<%= it.releaseUrl %>">Release <%= it.build.releaseNumber %></a><% } %></p>
<h1>Build <%= it.build.number %></h1>
${MESSAGE}
<dl class="facts">
<dt>Status</dt><dd>${STATE("it.build.status")}</dd>
<dt>Pipeline</dt><dd><%= it.build.pipelineName ?? "(none)" %></dd>
<dt>Furthest stage</dt><dd><%= it.build.furthestStage ?? "(not deployed yet)" %></dd>
<dt>Created</dt><dd><%= it.created %> by <%= it.build.createdBy %></dd>
<% if (it.rejected) { %><dt>Rejected</dt><dd><%= it.rejected %> by <%= it.build.rejectedBy %></dd><% } %>
</dl>
<h2>Pipeline</h2>
<% if (it.stages.length === 0) { %><p class="muted">The build's pipeline is not known.</p><% } else { %>
<ol class="stages">
<% for (const stage of it.stages) { %>
<li<% if (stage.next) { %> aria-current="step"<% } %>>
  <strong><%= stage.name %></strong><% if (stage.environment) { %> <span class="muted"><%= stage.environment %></span><% } %><br>
  <% if (stage.deployment) { %><a href="<%= stage.deployment.url %>">${STATE("stage.deployment.status")}</a> <span class="muted"><%= stage.deployment.when %></span>
  <% } else if (stage.next) { %><span class="muted">next</span><% } else { %><span class="muted">not deployed</span><% } %>
</li>
<% } %>
</ol>
<% } %>
<% if (it.deployAction || it.rejectAction) { %>
<div class="delivery-actions">
<% if (it.deployAction) { %>
<form method="post" action="<%= it.deployAction %>">${CSRF}<button type="submit">Deploy to <%= it.nextStage %></button></form>
<% } %>
<% if (it.rejectAction) { %>
<form method="post" action="<%= it.rejectAction %>">${CSRF}<button type="submit" class="danger">Reject build</button></form>
<% } %>
</div>
<% } %>
<h2>Deployments</h2>
<% if (it.deployments.length === 0) { %><p class="muted">No deployment yet.</p><% } else { %>
<table>
<thead><tr><th scope="col">Execution</th><th scope="col">Stage</th><th scope="col">Status</th><th scope="col" class="wide">Started</th><th scope="col" class="wide">Ended</th></tr></thead>
<tbody>
<% for (const deployment of it.deployments) { %>
<tr>
  <td><a href="<%= deployment.url %>">#<%= deployment.id %></a></td>
  <td><%= deployment.stage %></td>
  <td>${STATE("deployment.status")}</td>
  <td class="wide"><%= deployment.started %></td>
  <td class="wide"><%= deployment.ended %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
${BADGE_BUILDER}`;

export const EXECUTION = `<% layout("@layout") %>
<p class="crumbs"><a href="/applications">Applications</a> / <a href="<%= it.applicationUrl %>"><%= it.deployment.applicationName %></a> / <a href="<%= it.buildUrl %>">Build <%= it.deployment.buildNumber %></a></p>
<h1>Deployment #<%= it.deployment.id %> to <%= it.deployment.stageName %></h1>
<dl class="facts">
<dt>Status</dt><dd data-delivery-status>${STATE("it.deployment.status")}</dd>
<% if (it.deployment.releaseNumber !== undefined) { %><dt>Release</dt><dd><a href="<%= it.releaseUrl %>"><%= it.deployment.releaseNumber %></a></dd><% } %>
<dt>Pipeline</dt><dd><%= it.deployment.pipelineName %></dd>
<% if (it.deployment.environmentName) { %><dt>Environment</dt><dd><%= it.deployment.environmentName %></dd><% } %>
<dt>Created</dt><dd><%= it.created %> by <%= it.deployment.createdBy %></dd>
<% if (it.started) { %><dt>Started</dt><dd><%= it.started %></dd><% } %>
<% if (it.ended) { %><dt>Ended</dt><dd data-delivery-ended><%= it.ended %></dd><% } %>
</dl>
<h2 id="log-heading">Log</h2>
<% if (it.running) { %><p class="muted" data-delivery-hint>Still running: reload the page to see more of the log.</p><% } %>
<pre class="log" tabindex="0" aria-labelledby="log-heading" aria-live="polite"<% if (it.running) { %> data-delivery-log="<%= it.logUrl %>" data-delivery-offset="<%= it.log.length %>"<% } %>><%= it.log %></pre>
`;
