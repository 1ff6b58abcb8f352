/**
 * Script of the web UI's part: browsing and publishing packages: feed and package pages, upload, delete (joined into /ui/app.js, run
 * after the page is parsed). Pages work without it: it only adds what needs JavaScript.
 */
export const PACKAGES_SCRIPT = ``;
