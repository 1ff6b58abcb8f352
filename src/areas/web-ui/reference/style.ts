/** Stylesheet rules of the web UI's part: the native API reference in the web UI's look (joined into /ui/style.css). */
export const REFERENCE_STYLE = ``;
