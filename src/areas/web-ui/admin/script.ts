/**
 * Script of the web UI's part: administration: feeds, connectors, users, groups, permissions, health (joined into /ui/app.js, run
 * after the page is parsed). Pages work without it: it only adds what needs JavaScript.
 */
export const ADMIN_SCRIPT = ``;
