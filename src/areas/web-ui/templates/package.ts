/**
 * GET /feeds/:feed/packages/:name?group=&version=&page=: one package, the version shown (the latest
 * unless `version` names one), all versions newest first in pages, files and download links.
 */
export const PACKAGE = `<% layout("@layout") %>
<p class="muted"><a href="/feeds">Feeds</a> / <a href="<%= it.feedHref %>"><%= it.feedName %></a> /</p>
<div class="package-head">
<% if (it.shown.icon) { %><img class="icon" src="<%= it.shown.icon %>" alt="" width="48" height="48" referrerpolicy="no-referrer"><% } %>
<div>
<h1><%= it.shown.title || it.fullName %></h1>
<p class="muted"><%= it.fullName %> <strong><%= it.shown.version %></strong><% if (it.shown.isLatest) { %> (latest)<% } else { %> · <a href="<%= it.latestHref %>">latest is <%= it.latest %></a><% } %></p>
</div>
</div>
<% if (it.shown.description) { %><p class="description"><%= it.shown.description %></p><% } %>
<% if (it.shown.tags.length > 0) { %>
<ul class="tags" aria-label="Tags"><% for (const tag of it.shown.tags) { %><li><%= tag %></li><% } %></ul>
<% } %>

<p class="downloads">
  <a class="button" href="<%= it.download.upack %>" download>Download package</a>
  <a class="button" href="<%= it.download.zip %>" download>Contents as zip</a>
  <a class="button" href="<%= it.download.tgz %>" download>Contents as tgz</a>
</p>

<% if (it.deleteAction && it.csrfToken) { %>
<details class="package-delete">
<summary>Delete version <%= it.shown.version %>…</summary>
<form method="post" action="<%= it.deleteAction %>">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <input type="hidden" name="group" value="<%= it.group %>">
  <input type="hidden" name="version" value="<%= it.shown.version %>">
  <p>This removes <%= it.fullName %> <%= it.shown.version %> from the feed for everyone; it cannot be undone.</p>
  <button type="submit" class="danger">Delete <%= it.fullName %> <%= it.shown.version %></button>
</form>
</details>
<% } %>

<dl class="facts">
  <dt>Published</dt><dd><%= it.shown.published %><% if (it.shown.publisher) { %> by <%= it.shown.publisher %><% } %></dd>
  <dt>Size</dt><dd><%= it.shown.size %></dd>
  <dt>Downloads</dt><dd><%= it.shown.downloads %> of this version, <%= it.totalDownloads %> of all versions</dd>
  <dt>SHA-1</dt><dd><code><%= it.shown.sha1 %></code></dd>
  <dt>SHA-256</dt><dd><code><%= it.shown.sha256 %></code></dd>
  <% if (it.shown.origin) { %><dt>Origin</dt><dd><%= it.shown.origin %></dd><% } %>
</dl>

<%~ include("@package-provenance", { ...it.provenance, csrfToken: it.csrfToken }) %>

<h2>Dependencies</h2>
<% if (it.shown.dependencies.length === 0) { %>
<p class="muted">None.</p>
<% } else { %>
<ul>
<% for (const dependency of it.shown.dependencies) { %>
  <li><% if (dependency.href) { %><a href="<%= dependency.href %>"><%= dependency.text %></a><% } else { %><%= dependency.text %><% } %></li>
<% } %>
</ul>
<% } %>

<h2>Deployments of <%= it.shown.version %></h2>
<% if (it.deployments.length === 0) { %>
<p class="muted">No deployment of this version is recorded.</p>
<% } else { %>
<table>
<thead><tr><th scope="col">Date</th><th scope="col">Application</th><th scope="col">Target</th><th scope="col" class="wide">By</th><th scope="col" class="wide">Description</th></tr></thead>
<tbody>
<% for (const deployment of it.deployments) { %>
<tr>
  <td><%= deployment.date %></td>
  <td><% if (deployment.href) { %><a href="<%= deployment.href %>" rel="noopener noreferrer"><%= deployment.application %></a><% } else { %><%= deployment.application %><% } %></td>
  <td><%= deployment.target %></td>
  <td class="wide"><%= deployment.userName %></td>
  <td class="wide"><%= deployment.description %></td>
</tr>
<% } %>
</tbody>
</table>
<% if (it.deploymentsCut) { %><p class="muted">The latest <%= it.deployments.length %> deployments are listed.</p><% } %>
<% } %>

<% if (it.uploadAction && it.csrfToken) { %>
<h2>Publish</h2>
<%~ include("@packages-upload", { action: it.uploadAction, csrfToken: it.csrfToken }) %>
<% } %>

<h2>Versions <span class="muted">(<%= it.versionCount %>)</span></h2>
<table>
<thead><tr><th scope="col">Version</th><th scope="col" class="wide">Published</th><th scope="col" class="num">Size</th><th scope="col" class="num wide">Downloads</th></tr></thead>
<tbody>
<% for (const version of it.versions) { %>
<tr>
  <td><a href="<%= version.href %>"<% if (version.current) { %> aria-current="page"<% } %>><%= version.version %></a></td>
  <td class="wide"><%= version.published %></td>
  <td class="num"><%= version.size %></td>
  <td class="num wide"><%= version.downloads %></td>
</tr>
<% } %>
</tbody>
</table>
<% if (it.previous || it.next) { %>
<nav class="pager" aria-label="Version pages">
  <% if (it.previous) { %><a href="<%= it.previous %>" rel="prev">Newer versions</a><% } %>
  <span>Page <%= it.page %></span>
  <% if (it.next) { %><a href="<%= it.next %>" rel="next">Older versions</a><% } %>
</nav>
<% } %>

<h2>Files of <%= it.shown.version %></h2>
<% if (it.files.length === 0) { %>
<p class="muted">No files.</p>
<% } else { %>
<table>
<thead><tr><th scope="col">File</th><th scope="col" class="num">Size</th><th scope="col" class="wide">Date</th></tr></thead>
<tbody>
<% for (const file of it.files) { %>
<tr><td><a href="<%= file.href %>"><%= file.name %></a></td><td class="num"><%= file.size %></td><td class="wide"><%= file.date %></td></tr>
<% } %>
</tbody>
</table>
<% if (it.filesCut) { %><p class="muted">The first <%= it.files.length %> of <%= it.fileCount %> files are listed; the package holds them all.</p><% } %>
<% } %>

<h2>How to use it</h2>
<%~ include("@snippets", { snippets: it.snippets }) %>
`;

/**
 * The upload zone of the feed and package pages (partial `@packages-upload`, given `{ action,
 * csrfToken }`): a plain multipart form that works without JavaScript (`_csrf` first, so that the
 * token is read before any file byte); /ui/app.js adds dropping a file on it and a progress bar.
 */
export const UPLOAD_ZONE = `<form method="post" action="<%= it.action %>" enctype="multipart/form-data" class="package-upload" data-packages-upload>
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <fieldset class="package-drop" data-packages-drop>
    <legend>Upload a package</legend>
    <p class="muted" data-packages-drop-hint hidden>Drop a .upack file here, or choose one.</p>
    <label for="package-file">Package file (.upack)</label>
    <input id="package-file" name="file" type="file" accept=".upack,.zip,application/zip" required>
    <div class="package-progress" data-packages-progress hidden><progress max="100" value="0" aria-label="Upload progress"></progress></div>
    <p data-packages-status role="status"></p>
    <button type="submit">Upload</button>
  </fieldset>
</form>
`;
