/** Stylesheet rules of the web UI's part: the native API reference in the web UI's look (joined into /ui/style.css). */
export const REFERENCE_STYLE = `
.reference section { border-top: 1px solid var(--line); margin-top: 2rem; }
.reference table { display: block; overflow-x: auto; margin: .5rem 0 1rem; }
.reference caption { text-align: left; font-weight: 600; padding: .25rem 0; }
.reference th[scope=row] { color: var(--fg); white-space: nowrap; }
.reference pre { white-space: pre; overflow-x: auto; overflow-wrap: normal; }
.reference h2 code, .reference h1 code { overflow-wrap: anywhere; }
`;
