/** Stylesheet rules of the web UI's part: configuration management: servers, roles, environments, drift (joined into /ui/style.css). */
export const CONFIGURATION_STYLE = `
.config-status, .config-state { display: inline-block; padding: 0 0.4em; border-radius: 0.3em; border: 1px solid currentColor; font-size: 0.9em; white-space: nowrap; }
.config-check { white-space: nowrap; }
.config-status-current, .config-state-completed, .config-check-completed { color: #1a6b2f; }
.config-status-drifted, .config-status-pendingRemediation, .config-state-faulted { color: #8a4b00; }
.config-status-error, .config-check-error { color: #a4161a; }
.config-status-unknown, .config-status-disabled, .config-state-disabled { color: #555; }
.config-status-executing, .config-check-executing, .config-state-pending, .config-state-running { color: #1d4f91; }
.config-counts { display: flex; flex-wrap: wrap; gap: 0.5em 1.25em; list-style: none; padding: 0; }
.config-table td { vertical-align: top; overflow-wrap: anywhere; }
.config-scroll { max-width: 100%; overflow-x: auto; }
.config-differences { margin: 0; padding-left: 1.1em; }
.config-differences code, .config-items code { overflow-wrap: anywhere; }
.config-actions form { margin: 0.75em 0; }
.config-remediate input:not([type=checkbox]) { display: block; max-width: 100%; margin-bottom: 0.5em; }
.config-log { list-style: none; padding: 0; font-family: monospace; font-size: 0.9em; }
.config-log li { padding: 0.15em 0; border-bottom: 1px solid #eee; overflow-wrap: anywhere; white-space: pre-wrap; }
.config-log-warn strong { color: #8a4b00; }
.config-log-error strong { color: #a4161a; }
`;
