/** Stylesheet rules of the web UI's part: browsing and publishing packages: feed and package pages, upload, delete (joined into /ui/style.css). */
export const PACKAGES_STYLE = ``;
