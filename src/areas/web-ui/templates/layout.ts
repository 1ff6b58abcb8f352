/**
 * The frame of every page. Eta escapes every `<%= %>`; `<%~ %>` (unescaped) is used only for
 * `it.body`, which is the already-escaped output of the page's own template. No inline script or
 * style anywhere (the Content-Security-Policy forbids both): behaviour comes from /ui/app.js, which
 * sends the signed-in session's CSRF token (the csrf-token meta) as `x-csrf-token` on its requests.
 */
export const LAYOUT = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title><%= it.title %> · Wharf</title>
<link rel="icon" href="data:,">
<% if (it.csrfToken) { %><meta name="csrf-token" content="<%= it.csrfToken %>"><% } %>
<link rel="stylesheet" href="/ui/style.css?v=<%= it.assetVersion %>">
<script src="/ui/app.js?v=<%= it.assetVersion %>" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/">Wharf</a>
  <nav aria-label="Main">
    <a href="/feeds">Feeds</a>
    <a href="/applications">Applications</a>
    <a href="/configuration">Configuration</a>
    <a href="/admin">Administration</a>
    <a href="/reference/api">API reference</a>
  </nav>
  <div class="who">
  <% if (it.user) { %>
    <span>Signed in as <strong><%= it.user %></strong></span>
    <a href="/account">Account</a>
    <form method="post" action="/sign-out">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <button type="submit">Sign out</button>
    </form>
  <% } else { %>
    <a href="/sign-in">Sign in</a>
  <% } %>
  </div>
</header>
<main id="main">
<%~ it.body %>
</main>
</body>
</html>
`;
