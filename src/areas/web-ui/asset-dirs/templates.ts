/**
 * The file browser's pages (Eta; every value escaped with `<%= %>`, names included: a file may be
 * called `<script>`). No inline script or style: script.ts adds drag and drop and upload progress
 * to the upload form, which works without it as a plain multipart form.
 */

const CRUMBS = `<nav aria-label="Breadcrumb" class="asset-crumbs"><ol>
<% for (const crumb of it.crumbs) { %><li><a href="<%= crumb.href %>"><%= crumb.name %></a></li><% } %>
</ol></nav>`;

const MESSAGE = `<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>`;

/** GET /assets/<feed>/<folder>/: the folder's items, paged, and what the viewer may do here. */
export const ASSET_FOLDER = `<% layout("@layout") %>
${CRUMBS}
<h1><%= it.title %></h1>
${MESSAGE}
<% if (it.items.length === 0) { %>
<p class="muted"><% if (it.page > 1) { %>No items on this page.<% } else { %>This folder is empty.<% } %></p>
<% } else { %>
<table class="asset-list">
<caption class="visually-hidden">Items of <%= it.title %></caption>
<thead><tr><th scope="col">Name</th><th scope="col" class="num">Size</th><th scope="col" class="wide">Type</th><th scope="col" class="wide">Modified</th></tr></thead>
<tbody>
<% for (const item of it.items) { %>
<tr>
  <td><a href="<%= item.href %>"<% if (item.isFolder) { %> class="asset-folder"<% } %>><%= item.name %><% if (item.isFolder) { %>/<% } %></a></td>
  <td class="num"><%= item.size %></td>
  <td class="wide"><%= item.type %></td>
  <td class="wide"><%= item.modified %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
<% if (it.previous || it.next) { %>
<nav class="pager" aria-label="Pages">
  <% if (it.previous) { %><a href="<%= it.previous %>" rel="prev">Previous</a><% } %>
  <span>Page <%= it.page %> of <%= it.pages %> (<%= it.total %> items)</span>
  <% if (it.next) { %><a href="<%= it.next %>" rel="next">Next</a><% } %>
</nav>
<% } %>

<% if (it.can.add) { %>
<h2>Upload files</h2>
<form method="post" action="<%= it.actions.upload %>" enctype="multipart/form-data" class="asset-upload"
  data-asset-upload="<%= it.actions.uploadBase %>">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <div class="asset-drop" data-asset-drop>
    <label for="asset-files">Files to upload into this folder</label>
    <input id="asset-files" name="file" type="file" multiple required>
    <p class="muted asset-drop-hint" hidden data-asset-drop-hint>…or drop files here.</p>
  </div>
  <button type="submit">Upload</button>
  <div class="asset-progress" hidden data-asset-progress>
    <label for="asset-progress-bar">Upload progress</label>
    <progress id="asset-progress-bar" max="100" value="0"></progress>
    <p role="status" aria-live="polite" data-asset-status></p>
  </div>
</form>

<h2>New folder</h2>
<form method="post" action="<%= it.actions.folder %>" class="asset-inline">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <label for="asset-folder-name">Folder name</label>
  <input id="asset-folder-name" name="name" required maxlength="255" value="<%= it.folderName %>">
  <button type="submit">Create folder</button>
</form>
<% } %>
<% if (it.editHref || it.deleteHref) { %>
<p class="asset-actions">
  <% if (it.editHref) { %><a class="button" href="<%= it.editHref %>">Folder settings</a><% } %>
  <% if (it.deleteHref) { %><a class="button" href="<%= it.deleteHref %>">Delete folder…</a><% } %>
</p>
<% } %>
`;

/** GET /assets/<feed>/<file>: facts, preview (text, image or a sandboxed frame), metadata and actions. */
export const ASSET_FILE = `<% layout("@layout") %>
${CRUMBS}
<h1 class="asset-name"><%= it.title %></h1>
<% if (it.downloadHref || it.editHref || it.deleteHref) { %>
<p class="asset-actions">
  <% if (it.downloadHref) { %><a class="button" href="<%= it.downloadHref %>" download="<%= it.title %>">Download</a><% } %>
  <% if (it.editHref) { %><a class="button" href="<%= it.editHref %>">Edit metadata</a><% } %>
  <% if (it.deleteHref) { %><a class="button" href="<%= it.deleteHref %>">Delete…</a><% } %>
</p>
<% } %>
<dl class="facts">
  <dt>Size</dt><dd><%= it.file.size %> (<%= it.file.bytes %> bytes)</dd>
  <dt>Type</dt><dd><%= it.file.type %></dd>
  <dt>Modified</dt><dd><%= it.file.modified %></dd>
  <dt>Created</dt><dd><%= it.file.created %></dd>
  <dt>Cache-Control</dt><dd><code><%= it.file.cacheControl %></code> <span class="muted">(<%= it.file.cacheSetting %>)</span></dd>
  <dt>SHA-256</dt><dd><code><%= it.file.sha256 %></code></dd>
  <dt>SHA-1</dt><dd><code><%= it.file.sha1 %></code></dd>
  <dt>MD5</dt><dd><code><%= it.file.md5 %></code></dd>
</dl>
<% if (it.metadata.length > 0) { %>
<h2>Metadata</h2>
<table>
<thead><tr><th scope="col">Name</th><th scope="col">Value</th><th scope="col" class="wide">Response header</th></tr></thead>
<tbody>
<% for (const entry of it.metadata) { %>
<tr><td><%= entry.name %></td><td class="asset-value"><%= entry.value %></td><td class="wide"><%= entry.header ? "yes" : "no" %></td></tr>
<% } %>
</tbody>
</table>
<% } %>

<h2>Preview</h2>
<% if (it.preview.kind === "text") { %>
<pre class="asset-text" tabindex="0" aria-label="Contents of <%= it.title %>"><%= it.preview.text %></pre>
<% if (it.preview.truncated) { %><p class="muted">Only the first <%= it.preview.limit %> are shown: download the file to see it all.</p><% } %>
<% } else if (it.preview.kind === "image") { %>
<p><img class="asset-image" src="<%= it.preview.src %>" alt="Preview of <%= it.title %>"></p>
<% } else if (it.preview.kind === "sandboxed") { %>
<p class="muted">Shown in a sandbox: scripts in this file do not run.</p>
<iframe class="asset-frame" sandbox src="<%= it.preview.src %>" title="Sandboxed preview of <%= it.title %>"></iframe>
<% } else { %>
<p class="muted"><%= it.preview.reason %></p>
<% } %>
`;

/** GET ?edit: the item's type, cache setting and user metadata, posted to the metadata action. */
export const ASSET_EDIT = `<% layout("@layout") %>
${CRUMBS}
<h1><%= it.title %></h1>
${MESSAGE}
<form method="post" action="<%= it.action %>" class="asset-edit">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <% if (!it.isFolder) { %>
  <label for="asset-type">Content type</label>
  <input id="asset-type" name="type" value="<%= it.form.type %>" placeholder="decided from the extension" maxlength="255">
  <% } %>
  <fieldset>
    <legend>Caching (Cache-Control of downloads)</legend>
    <label for="asset-cache-type">Setting</label>
    <select id="asset-cache-type" name="cacheType">
    <% for (const option of it.cacheTypes) { %>
      <option value="<%= option.value %>"<% if (option.value === it.form.cacheType) { %> selected<% } %>><%= option.label %></option>
    <% } %>
    </select>
    <label for="asset-cache-value">Value (seconds for a time to live, the header's text for custom)</label>
    <input id="asset-cache-value" name="cacheValue" value="<%= it.form.cacheValue %>" maxlength="1000">
  </fieldset>
  <fieldset>
    <legend>Metadata</legend>
    <p class="muted">Clear a name to remove its entry. A response header is sent with every download of the file.</p>
    <table class="asset-meta">
    <thead><tr><th scope="col">Name</th><th scope="col">Value</th><th scope="col">As header</th></tr></thead>
    <tbody>
    <% it.form.entries.forEach((entry, i) => { %>
    <tr>
      <td><input name="name.<%= i %>" value="<%= entry.name %>" aria-label="Name <%= i + 1 %>" maxlength="200"></td>
      <td><input name="value.<%= i %>" value="<%= entry.value %>" aria-label="Value <%= i + 1 %>"></td>
      <td><label class="check"><input type="checkbox" name="header.<%= i %>" value="on"<% if (entry.header) { %> checked<% } %>> sent</label></td>
    </tr>
    <% }) %>
    </tbody>
    </table>
  </fieldset>
  <button type="submit">Save</button>
  <a class="button" href="<%= it.back %>">Cancel</a>
</form>
`;

/** GET ?delete: the confirmation step before a delete. */
export const ASSET_DELETE = `<% layout("@layout") %>
${CRUMBS}
<h1>Delete <%= it.title %>?</h1>
<% if (it.isFolder) { %>
<p>The folder and <strong>everything in it</strong> will be deleted. This cannot be undone.</p>
<% } else { %>
<p>The file will be deleted. This cannot be undone.</p>
<% } %>
<form method="post" action="<%= it.action %>" class="asset-inline">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <button type="submit" class="danger">Delete</button>
  <a class="button" href="<%= it.back %>">Cancel</a>
</form>
`;
