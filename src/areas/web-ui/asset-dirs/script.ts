/**
 * Script of the web UI's part: asset directories: the file browser, previews, uploads (joined into /ui/app.js, run
 * after the page is parsed). Pages work without it: it only adds what needs JavaScript.
 */
export const ASSET_DIRS_SCRIPT = ``;
