/**
 * The sign-in form. Every value is escaped (`<%= %>`); `next` travels in a hidden field and is
 * checked again when posted (sign-in-routes.ts safeNext). The same message answers a wrong
 * password and an unknown user.
 */
export const SIGN_IN = `<% layout("@layout") %>
<section class="sign-in">
<h1>Sign in</h1>
<% if (it.message) { %>
<p class="error" role="alert"><%= it.message %></p>
<% } %>
<form method="post" action="/sign-in">
  <input type="hidden" name="_csrf" value="<%= it.signInCsrf %>">
  <input type="hidden" name="next" value="<%= it.next %>">
  <label for="sign-in-user">User name</label>
  <input id="sign-in-user" name="user" type="text" autocomplete="username" autocapitalize="none" spellcheck="false"
    required maxlength="256" value="<%= it.userName %>"<% if (!it.userName) { %> autofocus<% } %>>
  <label for="sign-in-password">Password</label>
  <input id="sign-in-password" name="password" type="password" autocomplete="current-password" required
    maxlength="1024"<% if (it.userName) { %> autofocus<% } %>>
  <p><button type="submit">Sign in</button></p>
</form>
</section>
`;
