/** Stylesheet rules of the web UI's part: browsing and publishing packages: upload zone, delete, connectors (joined into /ui/style.css). */
export const PACKAGES_STYLE = `.package-drop { min-width: 0; border: 2px dashed var(--line); border-radius: .375rem; padding: .5rem 1rem 1rem; }
.package-drop.package-dragging { border-color: var(--accent); background: var(--panel); }
.package-drop input[type=file] { display: block; max-width: 100%; margin: .25rem 0 .5rem; }
.package-upload button:disabled { opacity: .55; cursor: progress; }
.package-progress progress { width: 100%; height: 1rem; }
.package-delete { margin: .75rem 0; }
.package-delete summary { cursor: pointer; }
.connector-error { color: var(--danger, inherit); font-weight: 600; }
`;
