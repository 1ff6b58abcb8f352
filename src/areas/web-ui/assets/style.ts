import { ADMIN_STYLE } from "../admin/style.js";
import { AUDIT_STYLE } from "../audit/style.js";
import { ASSET_DIRS_STYLE } from "../asset-dirs/style.js";
import { CONFIGURATION_STYLE } from "../configuration/style.js";
import { DELIVERY_STYLE } from "../delivery/style.js";
import { PACKAGES_STYLE } from "../pages/style.js";
import { REFERENCE_STYLE } from "../reference/style.js";
import { WEBHOOKS_STYLE } from "../webhooks/style.js";
import { RETENTION_STYLE } from "../retention/templates.js";

/** The frame's and shared rules. Light and dark follow the system setting. */
const BASE_STYLE = `:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --accent: #0a58ca; --panel: #f6f8fa;
  --danger: #b42318; --focus: #0a58ca;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 16px; line-height: 1.5;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9da7b3; --line: #30363d; --accent: #6cb6ff; --panel: #161b22;
    --danger: #ff8182; --focus: #6cb6ff; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .5rem; z-index: 10; }
.top { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .75rem 1.25rem;
  border-bottom: 1px solid var(--line); background: var(--panel); }
.top .brand { font-weight: 700; font-size: 1.2rem; text-decoration: none; color: var(--fg); }
.top nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; flex: 1; }
.top .who { display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; }
.top form { margin: 0; }
main { max-width: 72rem; margin: 0 auto; padding: 1.25rem; }
h1 { font-size: 1.6rem; margin: .25rem 0 1rem; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; }
button, input, select, textarea { font: inherit; color: inherit; }
button { background: var(--accent); color: #fff; border: 0; border-radius: .375rem; padding: .4rem .9rem; cursor: pointer; }
@media (prefers-color-scheme: dark) { button { color: #0d1117; } }
button.danger { background: var(--danger); }
input, select, textarea { background: var(--bg); border: 1px solid var(--line); border-radius: .375rem; padding: .4rem .6rem; }
label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
.muted { color: var(--muted); }
.error { color: var(--danger); font-weight: 600; }
.pager { display: flex; gap: 1rem; margin: 1rem 0; }
.sign-in { max-width: 22rem; margin: 2rem auto; }
.sign-in input:not([type=hidden]) { width: 100%; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
/* Long commands wrap rather than scroll: a scrolling box would need keyboard focus of its own. */
pre { background: var(--panel); border: 1px solid var(--line); padding: .75rem; border-radius: .375rem;
  white-space: pre-wrap; overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; margin: 1.5rem 0 .5rem; }
h3 { font-size: 1rem; margin: 1rem 0 .25rem; }
form.search { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-bottom: 1rem; }
form.search label { margin: 0; }
form.search input[type=search] { flex: 1; min-width: 12rem; }
.package-head { display: flex; gap: 1rem; align-items: center; }
.package-head .icon { border-radius: .375rem; }
.description { white-space: pre-line; }
.tags { display: flex; flex-wrap: wrap; gap: .4rem; list-style: none; padding: 0; }
.tags li { background: var(--panel); border: 1px solid var(--line); border-radius: 1rem; padding: 0 .6rem; }
a.button { display: inline-block; border: 1px solid var(--accent); border-radius: .375rem; padding: .4rem .9rem;
  text-decoration: none; margin: 0 .5rem .5rem 0; }
.snippet { position: relative; }
.snippet pre { padding-right: 4.5rem; }
.snippet button { position: absolute; top: .4rem; right: .4rem; padding: .2rem .6rem; font-size: .85rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dl.facts dt { color: var(--muted); font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
fieldset { border: 1px solid var(--line); border-radius: .375rem; margin: 1rem 0; padding: .5rem 1rem .75rem; }
legend { font-weight: 600; padding: 0 .25rem; }
label.check { display: inline-flex; gap: .35rem; align-items: center; font-weight: 400; margin: .25rem 1rem .25rem 0; }
td form { margin: 0; }
@media (max-width: 40rem) {
  th.wide, td.wide { display: none; }
  main { padding: .75rem; }
}
`;

/** The pages' one stylesheet, served as /ui/style.css: the shared rules, then each part's own. */
export const STYLE = [
  BASE_STYLE,
  PACKAGES_STYLE,
  ASSET_DIRS_STYLE,
  DELIVERY_STYLE,
  CONFIGURATION_STYLE,
  ADMIN_STYLE,
  AUDIT_STYLE,
  REFERENCE_STYLE,
  WEBHOOKS_STYLE,
  RETENTION_STYLE,
].join("\n");
