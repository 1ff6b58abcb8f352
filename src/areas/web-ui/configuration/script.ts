/**
 * Script of the web UI's part: configuration management: servers, roles, environments, drift (joined into /ui/app.js, run
 * after the page is parsed). Pages work without it: it only adds what needs JavaScript.
 */
export const CONFIGURATION_SCRIPT = ``;
