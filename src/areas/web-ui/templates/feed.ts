/**
 * GET /feeds/:feed: the feed's packages, paged, sorted and searchable (a GET form: it works without
 * JavaScript; /ui/app.js submits a `data-live` form as the viewer types), and how to use the feed.
 */
export const FEED = `<% layout("@layout") %>
<p class="muted"><a href="/feeds">Feeds</a> /</p>
<h1><%= it.feed.name %></h1>
<% if (it.feed.description) { %><p><%= it.feed.description %></p><% } %>
<p class="muted"><%= it.feed.type %> feed<% if (!it.feed.active) { %> · inactive<% } %></p>

<% if (it.listed) { %>
<form method="get" action="<%= it.feed.href %>" class="search" role="search" data-live>
  <label for="q">Search packages</label>
  <input id="q" name="q" type="search" value="<%= it.q %>" autocomplete="off">
  <label for="sort">Sort by</label>
  <select id="sort" name="sort">
  <% for (const option of it.sorts) { %>
    <option value="<%= option.value %>"<% if (option.selected) { %> selected<% } %>><%= option.label %></option>
  <% } %>
  </select>
  <button type="submit">Search</button>
</form>

<% if (it.packages.length === 0) { %>
<p class="muted"><% if (it.q) { %>No package matches “<%= it.q %>”.<% } else if (it.page > 1) { %>No packages on this page.<% } else { %>This feed has no packages yet.<% } %></p>
<% } else { %>
<table>
<thead><tr><th scope="col">Package</th><th scope="col">Latest</th><th scope="col" class="wide">Updated</th><th scope="col" class="num wide">Downloads</th></tr></thead>
<tbody>
<% for (const pkg of it.packages) { %>
<tr>
  <td><a href="<%= pkg.href %>"><%= pkg.fullName %></a><% if (pkg.title) { %><br><span class="muted"><%= pkg.title %></span><% } %></td>
  <td><%= pkg.latest %></td>
  <td class="wide"><%= pkg.updated %></td>
  <td class="num wide"><%= pkg.downloads %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
<% if (it.previous || it.next) { %>
<nav class="pager" aria-label="Pages">
  <% if (it.previous) { %><a href="<%= it.previous %>" rel="prev">Previous</a><% } %>
  <span>Page <%= it.page %></span>
  <% if (it.next) { %><a href="<%= it.next %>" rel="next">Next</a><% } %>
</nav>
<% } %>
<% } else { %>
<p class="muted">Packages of <%= it.feed.type %> feeds are not listed here.</p>
<% } %>

<% if (it.uploadAction && it.csrfToken) { %>
<h2>Publish</h2>
<%~ include("@packages-upload", { action: it.uploadAction, csrfToken: it.csrfToken }) %>
<% } %>

<% if (it.connectors) { %>
<h2>Connectors</h2>
<% if (it.connectors.length === 0) { %>
<p class="muted">This feed has no connector: it serves only the packages it stores.</p>
<% } else { %>
<table>
<thead><tr><th scope="col">Connector</th><th scope="col">Health</th><th scope="col" class="wide">Last checked</th><th scope="col" class="wide">URL</th></tr></thead>
<tbody>
<% for (const connector of it.connectors) { %>
<tr>
  <td><%= connector.name %></td>
  <td><span class="connector-<%= connector.state %>"><%= connector.state %></span><% if (connector.error) { %><br><span class="muted"><%= connector.error %></span><% } %></td>
  <td class="wide"><%= connector.lastChecked %></td>
  <td class="wide"><code><%= connector.url %></code></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
<% } %>

<h2>How to use it</h2>
<p>Feed URL: <code><%= it.feedUrl %></code></p>
<%~ include("@snippets", { snippets: it.snippets }) %>
`;
