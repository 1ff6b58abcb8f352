/** Stylesheet rules of the web UI's part: configuration management: servers, roles, environments, drift (joined into /ui/style.css). */
export const CONFIGURATION_STYLE = ``;
