/** Stylesheet rules of the web UI's part: delivery: applications, releases, builds, deployments and their live logs (joined into /ui/style.css). */
export const DELIVERY_STYLE = `
.crumbs { margin: 0 0 0.25rem; }
.state { display: inline-block; padding: 0 0.5em; border-radius: 0.75em; border: 1px solid currentColor; font-size: 0.9em; }
.state-succeeded, .state-deployed { color: #17692f; }
.state-warned { color: #7a4d00; }
.state-failed, .state-rejected, .state-canceled { color: #a3161b; }
.state-executing, .state-pending, .state-active { color: #1f4fa3; }
@media (prefers-color-scheme: dark) {
  .state-succeeded, .state-deployed { color: #7fd694; }
  .state-warned { color: #f0c060; }
  .state-failed, .state-rejected, .state-canceled { color: #ff9a9a; }
  .state-executing, .state-pending, .state-active { color: #9cc0ff; }
}
ol.stages { display: flex; flex-wrap: wrap; gap: 0.5rem; padding: 0; list-style: none; counter-reset: stage; }
ol.stages li { flex: 1 1 10rem; padding: 0.5rem 0.75rem; border: 1px solid #8888; border-radius: 0.4rem; }
ol.stages li[aria-current] { border-width: 2px; border-style: dashed; }
form.delivery-action { margin: 1rem 0; }
form.delivery-action label, form.delivery-action input, form.delivery-action select { display: block; max-width: 100%; }
form.delivery-action button { margin-top: 0.5rem; }
.delivery-actions { display: flex; flex-wrap: wrap; gap: 0.5rem; margin: 1rem 0; }
pre.log { max-height: 32rem; overflow: auto; padding: 0.75rem; border: 1px solid #8888; white-space: pre-wrap; overflow-wrap: anywhere; }
img.badge { vertical-align: middle; }
`;
