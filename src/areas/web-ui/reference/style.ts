/**
 * Stylesheet rules of the web UI's part: the native API reference in the web UI's look (joined into
 * /ui/style.css). Nothing scrolls sideways (a scrolling box would need keyboard focus): long names
 * (row headings, code in cells, titles) break anywhere, and on a phone any cell's text may (four
 * columns in 390 pixels); example lines wrap as in the base style's <pre>.
 */
export const REFERENCE_STYLE = `
.reference section { border-top: 1px solid var(--line); margin-top: 2rem; }
.reference table { margin: .5rem 0 1rem; }
.reference caption { text-align: left; font-weight: 600; padding: .25rem 0; }
.reference th[scope=row] { color: var(--fg); }
.reference th[scope=row], .reference td code, .reference h1, .reference h2 { overflow-wrap: anywhere; }
@media (max-width: 40rem) {
  .reference th, .reference td { padding: .35rem .25rem; font-size: .9rem; overflow-wrap: anywhere; }
}
`;
