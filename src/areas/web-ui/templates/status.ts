/** A page that answers a status in the frame: not found, forbidden. Every value escaped. */
export const STATUS = `<% layout("@layout") %>
<h1><%= it.title %></h1>
<p><%= it.message %></p>
<p><a href="/feeds">All feeds</a></p>
`;
