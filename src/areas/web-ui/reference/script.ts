/**
 * Script of the web UI's part: the native API reference in the web UI's look (joined into /ui/app.js, run
 * after the page is parsed). Pages work without it: it only adds what needs JavaScript.
 */
export const REFERENCE_SCRIPT = ``;
