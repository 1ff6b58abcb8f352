/**
 * Promotion and repackaging on the package page (issue 17 section 5). Every value is escaped
 * (`<%= %>`): feed names, comments and user names are other people's text.
 */

/**
 * The promote and repackage forms (partial `@package-promotion-forms`), given `{ forms, csrfToken,
 * open }`: each form appears only when the viewer has a feed to send the version to, and only with
 * a form token (a signed-in session). `open` (`promote` or `repackage`) unfolds that form, when it
 * is shown again after a refusal.
 */
export const PROMOTION_FORMS = `<% const f = it.forms; %>
<% if (f && it.csrfToken && f.promoteTargets.length > 0) { %>
<details class="package-delete"<%= it.open === "promote" ? " open" : "" %>>
<summary>Promote <%= f.version %> to another feed…</summary>
<form method="post" action="<%= f.promoteAction %>" class="admin-form">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <input type="hidden" name="group" value="<%= f.group %>">
  <input type="hidden" name="version" value="<%= f.version %>">
  <label for="promote-to">Target feed (<%= f.feedType %> feeds you may promote to)</label>
  <select id="promote-to" name="toFeed" required>
  <% for (const target of f.promoteTargets) { %><option value="<%= target %>"<%= target === f.values.toFeed ? " selected" : "" %>><%= target %></option><% } %>
  </select>
  <label for="promote-comments">Comments (why: kept with the promotion)</label>
  <textarea id="promote-comments" name="comments" rows="2" maxlength="2000"><%= f.values.promoteComments %></textarea>
  <p><button type="submit">Promote <%= f.fullName %> <%= f.version %></button></p>
</form>
</details>
<% } %>
<% if (f && it.csrfToken && f.repackageTargets.length > 0) { %>
<details class="package-delete"<%= it.open === "repackage" ? " open" : "" %>>
<summary>Repackage <%= f.version %> under a new version…</summary>
<form method="post" action="<%= f.repackageAction %>" class="admin-form">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <input type="hidden" name="group" value="<%= f.group %>">
  <input type="hidden" name="version" value="<%= f.version %>">
  <label for="repackage-version">New version (for example a release number for a tested prerelease)</label>
  <input id="repackage-version" name="newVersion" required maxlength="200" value="<%= f.values.newVersion %>">
  <label for="repackage-to">Save it in</label>
  <select id="repackage-to" name="toFeed">
  <% for (const target of f.repackageTargets) { %><option value="<%= target.value %>"<%= target.value === f.values.repackageTo ? " selected" : "" %>><%= target.label %></option><% } %>
  </select>
  <label for="repackage-comments">Comments (why: kept in the new upack.json)</label>
  <textarea id="repackage-comments" name="comments" rows="2" maxlength="2000"><%= f.values.repackageComments %></textarea>
  <p><button type="submit">Repackage <%= f.fullName %> <%= f.version %></button></p>
</form>
</details>
<% } %>`;

/**
 * The package page's Provenance section (partial `@package-provenance`, given the section's data
 * and `csrfToken`): where the shown version came from, what it was repackaged as, the promotions
 * of the package into and out of the feed, and the forms.
 */
export const PROVENANCE = `<h2 id="provenance">Provenance of <%= it.version %></h2>
<% if (!it.promotedFrom && !it.repackagedFrom && it.repackagedAs.length === 0) { %>
<p class="muted">Published here directly: no promotion or repackaging of this version is recorded.</p>
<% } %>
<% if (it.promotedFrom) { const p = it.promotedFrom; %>
<dl class="facts">
  <dt>Promoted from</dt><dd><a href="<%= p.href %>"><%= p.feed %></a></dd>
  <dt>Promoted by</dt><dd><%= p.by %></dd>
  <dt>Promoted</dt><dd><%= p.date %></dd>
  <% if (p.comments) { %><dt>Comments</dt><dd><%= p.comments %></dd><% } %>
</dl>
<% } %>
<% if (it.repackagedFrom) { const r = it.repackagedFrom; %>
<dl class="facts">
  <dt>Repackaged from</dt><dd><a href="<%= r.href %>"><%= r.version %></a> in <%= r.feed %></dd>
  <% if (r.sha1) { %><dt>Original SHA-1</dt><dd><code><%= r.sha1 %></code></dd><% } %>
  <% if (r.sha256) { %><dt>Original SHA-256</dt><dd><code><%= r.sha256 %></code></dd><% } %>
  <dt>Repackaged by</dt><dd><%= r.by %></dd>
  <dt>Repackaged</dt><dd><%= r.date %></dd>
  <% if (r.comments) { %><dt>Comments</dt><dd><%= r.comments %></dd><% } %>
</dl>
<% } %>
<% if (it.repackagedAs.length > 0) { %>
<p>Repackaged as: <% for (const [i, r] of it.repackagedAs.entries()) { %><%= i > 0 ? ", " : "" %><a href="<%= r.href %>"><%= r.version %></a> in <%= r.feed %> (<%= r.date %> by <%= r.by %>)<% } %></p>
<% } %>
<h3>Promotions of <%= it.fullName %> into and out of <%= it.feedName %></h3>
<% if (it.promotions.length === 0) { %>
<p class="muted">None recorded.</p>
<% } else { %>
<table>
<thead><tr><th scope="col">Date</th><th scope="col">Version</th><th scope="col">From</th><th scope="col">To</th><th scope="col" class="wide">By</th><th scope="col" class="wide">Comments</th></tr></thead>
<tbody>
<% for (const p of it.promotions) { %>
<tr><td><%= p.date %></td><td><a href="<%= p.href %>"><%= p.version %></a></td><td><%= p.from %></td><td><%= p.to %></td><td class="wide"><%= p.by %></td><td class="wide"><%= p.comments %></td></tr>
<% } %>
</tbody>
</table>
<% if (it.promotionsCut) { %><p class="muted">The latest <%= it.promotions.length %> promotions are listed.</p><% } %>
<% } %>
<%~ include("@package-promotion-forms", { forms: it.forms, csrfToken: it.csrfToken, open: "" }) %>
`;

/** A refused promotion or repackaging: the message, the forms again as they were filled in, and the way back. */
export const PROMOTION_REFUSED = `<% layout("@layout") %>
<p class="muted"><a href="/feeds">Feeds</a> / <a href="<%= it.backHref %>"><%= it.fullName %> <%= it.version %></a></p>
<h1><%= it.title %></h1>
<p class="error" role="alert"><%= it.message %></p>
<%~ include("@package-promotion-forms", { forms: it.forms, csrfToken: it.csrfToken, open: it.open }) %>
<p><a href="<%= it.backHref %>">Back to <%= it.fullName %> <%= it.version %></a></p>
`;
