/** GET /admin/users: users (create, edit, set password, delete) and groups (create, members, delete). */
export const ADMIN_USERS = `<% layout("@layout") %>
<h1>Users and groups</h1>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<h2>Users</h2>
<table class="admin-table">
<thead><tr><th scope="col">Name</th><th scope="col" class="wide">Display name</th><th scope="col" class="wide">E-mail</th><th scope="col">Groups</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
<% for (const user of it.users) { %>
<tr>
  <td><%= user.name %></td><td class="wide"><%= user.displayName %></td><td class="wide"><%= user.email %></td><td><%= user.groups.join(", ") %></td>
  <td>
    <details><summary>Edit <span class="visually-hidden"><%= user.name %></span></summary>
    <form method="post" action="/admin/users/edit" class="admin-form">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <input type="hidden" name="name" value="<%= user.name %>">
      <label>Display name <input name="displayName" maxlength="1000" value="<%= user.displayName %>"></label>
      <label>E-mail <input name="email" type="email" maxlength="1000" value="<%= user.email %>"></label>
      <label>Groups (comma-separated) <input name="groups" value="<%= user.groups.join(", ") %>"></label>
      <label>New password (blank: unchanged) <input name="password" type="password" autocomplete="new-password"></label>
      <button type="submit">Save <%= user.name %></button>
    </form>
    <form method="post" action="/admin/users/delete">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <input type="hidden" name="name" value="<%= user.name %>">
      <label class="check"><input type="checkbox" name="confirm" value="yes" required> Yes, delete</label>
      <button type="submit" class="danger">Delete <%= user.name %></button>
    </form>
    </details>
  </td>
</tr>
<% } %>
</tbody>
</table>
<h3 id="new-user">Create a user</h3>
<form method="post" action="/admin/users" class="admin-form" aria-labelledby="new-user">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <label for="user-name">Name</label><input id="user-name" name="name" required maxlength="256" value="<%= it.form.name %>">
  <label for="user-display">Display name</label><input id="user-display" name="displayName" maxlength="1000" value="<%= it.form.displayName %>">
  <label for="user-email">E-mail</label><input id="user-email" name="email" type="email" maxlength="1000" value="<%= it.form.email %>">
  <label for="user-password">Password</label><input id="user-password" name="password" type="password" autocomplete="new-password">
  <p><button type="submit">Create user</button></p>
</form>

<h2>Groups</h2>
<% if (it.groups.length === 0) { %><p class="muted">There is no group.</p><% } else { %>
<table class="admin-table">
<thead><tr><th scope="col">Name</th><th scope="col">Members</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
<% for (const group of it.groups) { %>
<tr>
  <td><%= group.name %></td>
  <td>
    <form method="post" action="/admin/groups" class="inline-form">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <input type="hidden" name="name" value="<%= group.name %>">
      <label>Members of <%= group.name %> <input name="users" value="<%= group.users.join(", ") %>"></label>
      <button type="submit">Save members</button>
    </form>
  </td>
  <td>
    <form method="post" action="/admin/groups/delete">
      <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
      <input type="hidden" name="name" value="<%= group.name %>">
      <button type="submit" class="danger">Delete <%= group.name %></button>
    </form>
  </td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
<h3 id="new-group">Create a group</h3>
<form method="post" action="/admin/groups" class="admin-form" aria-labelledby="new-group">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <label for="group-name">Name</label><input id="group-name" name="name" required maxlength="256">
  <label for="group-users">Members (comma-separated)</label><input id="group-users" name="users">
  <p><button type="submit">Create group</button></p>
</form>
`;

/** GET /admin/permissions: every grant and deny, with revoke; the grant form. */
export const ADMIN_PERMISSIONS = `<% layout("@layout") %>
<h1>Permissions</h1>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<table class="admin-table">
<thead><tr><th scope="col">Who</th><th scope="col">Task</th><th scope="col">Where</th><th scope="col" class="wide">Kind</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>
<% for (const p of it.permissions) { %>
<tr>
  <td><%= p.who %></td><td><%= p.task %></td><td><%= p.where %></td><td class="wide"><%= p.deny ? "deny" : "grant" %></td>
  <td><form method="post" action="/admin/permissions/<%= p.id %>/revoke">
    <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
    <button type="submit" class="danger" aria-label="Revoke <%= p.task %> of <%= p.who %>">Revoke</button>
  </form></td>
</tr>
<% } %>
</tbody>
</table>
<h2 id="grant">Grant a privilege</h2>
<form method="post" action="/admin/permissions" class="admin-form" aria-labelledby="grant">
  <input type="hidden" name="_csrf" value="<%= it.csrfToken %>">
  <label for="perm-user">User (or Anonymous)</label><input id="perm-user" name="user" value="<%= it.form.user %>">
  <label for="perm-group">or group</label><input id="perm-group" name="group" value="<%= it.form.group %>">
  <label for="perm-task">Task</label>
  <select id="perm-task" name="task">
  <% for (const task of it.tasks) { %><option value="<%= task %>"<% if (task === it.form.task) { %> selected<% } %>><%= task %></option><% } %>
  </select>
  <label for="perm-feed">Feed (blank: every feed)</label><input id="perm-feed" name="feed" value="<%= it.form.feed %>">
  <label for="perm-feed-group">or feed group</label><input id="perm-feed-group" name="feedGroup" value="<%= it.form.feedGroup %>">
  <label class="check"><input type="checkbox" name="deny" value="true"<% if (it.form.deny) { %> checked<% } %>> Deny instead of grant</label>
  <p><button type="submit">Save permission</button></p>
</form>
`;
