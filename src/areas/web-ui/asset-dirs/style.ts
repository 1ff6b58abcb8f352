/** Stylesheet rules of the web UI's part: asset directories: the file browser, previews, uploads (joined into /ui/style.css). */
export const ASSET_DIRS_STYLE = ``;
