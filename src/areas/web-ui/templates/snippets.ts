/**
 * Copyable commands, each under its heading with a Copy button (shown by /ui/app.js): the partial
 * `@snippets`, included by the feed and package pages with `{ snippets: [{ label, code }] }`.
 */
export const SNIPPETS = `<% for (const snippet of it.snippets) { %>
<h3 id="use-<%= snippet.label %>"><%= snippet.label %></h3>
<div class="snippet">
<pre><code id="snippet-<%= snippet.label %>"><%= snippet.code %></code></pre>
<button type="button" data-copy="snippet-<%= snippet.label %>" aria-describedby="use-<%= snippet.label %>" hidden>Copy</button>
</div>
<% } %>
`;
