/** Stylesheet rules of the web UI's part: administration: feeds, connectors, users, groups, permissions, health (joined into /ui/style.css). */
export const ADMIN_STYLE = `
.admin-form label { display: block; margin-top: .5rem; }
.admin-form input:not([type=checkbox]), .admin-form select, .admin-form textarea { width: 100%; max-width: 32rem; box-sizing: border-box; }
.inline-form label { display: block; overflow-wrap: anywhere; }
.inline-form input { display: block; width: 100%; min-width: 0; box-sizing: border-box; font-weight: normal; }
.admin-table td { overflow-wrap: anywhere; }
.admin-links li { margin: .25rem 0; }
details > summary { cursor: pointer; }
`;
