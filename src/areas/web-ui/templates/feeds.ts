/** GET /feeds: the feeds the viewer may see, with what each holds. */
export const FEEDS = `<% layout("@layout") %>
<h1>Feeds</h1>
<% if (it.feeds.length === 0) { %>
<p class="muted"><% if (it.user) { %>There is no feed you may view.<% } else { %>No feed is open to anonymous viewers. <a href="/sign-in?next=%2Ffeeds">Sign in</a> to see yours.<% } %></p>
<% } else { %>
<table class="feeds">
<thead><tr><th scope="col">Feed</th><th scope="col">Type</th><th scope="col" class="num">Contents</th><th scope="col" class="num">Size</th><th scope="col" class="wide">Description</th></tr></thead>
<tbody>
<% for (const feed of it.feeds) { %>
<tr>
  <td><a href="<%= feed.href %>"><%= feed.name %></a><% if (!feed.active) { %> <span class="muted">(inactive)</span><% } %></td>
  <td><%= feed.type %></td>
  <td class="num"><%= feed.items %></td>
  <td class="num"><%= feed.size %></td>
  <td class="wide"><%= feed.description %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
`;
