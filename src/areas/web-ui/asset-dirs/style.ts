/** Stylesheet rules of the web UI's part: asset directories: the file browser, previews, uploads (joined into /ui/style.css). */
export const ASSET_DIRS_STYLE = `.asset-crumbs ol { list-style: none; padding: 0; margin: 0; display: flex; flex-wrap: wrap; gap: .25rem; }
.asset-crumbs li + li::before { content: "/"; margin-right: .25rem; color: var(--muted); }
.asset-name, .asset-list td a, .asset-value { overflow-wrap: anywhere; }
.asset-text { max-height: 32rem; overflow: auto; }
.asset-image { max-width: 100%; height: auto; background: var(--panel); border: 1px solid var(--line); }
.asset-frame { width: 100%; height: 24rem; border: 1px solid var(--line); border-radius: .375rem; background: #fff; }
.asset-drop { border: 2px dashed var(--line); border-radius: .375rem; padding: .5rem 1rem 1rem; margin-bottom: .75rem; }
.asset-drop.asset-dragging { border-color: var(--accent); background: var(--panel); }
.asset-drop input[type=file] { max-width: 100%; }
.asset-upload button:disabled { opacity: .55; cursor: progress; }
.asset-progress progress { width: 100%; height: 1rem; }
.asset-inline { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.asset-inline label { margin: 0; }
.asset-edit input:not([type=checkbox]):not([type=hidden]) { width: 100%; max-width: 36rem; }
.asset-edit select { max-width: 100%; }
/* A fieldset is as wide as its content by default: the metadata table would push the page sideways. */
.asset-edit fieldset { min-width: 0; }
.asset-meta { table-layout: fixed; }
.asset-meta th:first-child { width: 35%; }
.asset-meta th:last-child { width: 22%; }
.asset-meta td { padding: .25rem; }
.asset-meta input:not([type=checkbox]) { width: 100%; box-sizing: border-box; }
.asset-meta label.check { margin: 0; }
`;
