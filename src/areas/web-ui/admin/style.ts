/** Stylesheet rules of the web UI's part: administration: feeds, connectors, users, groups, permissions, health (joined into /ui/style.css). */
export const ADMIN_STYLE = ``;
