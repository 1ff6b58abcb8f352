/** Stylesheet rules of the web UI's part: webhooks (joined into /ui/style.css). */
export const WEBHOOKS_STYLE = `
.webhook-notice { border: 1px solid var(--line); background: var(--panel); padding: .5rem 1rem; overflow-wrap: anywhere; }
.admin-form fieldset { margin-top: .5rem; border: 1px solid var(--line); }
.admin-form fieldset .check { display: inline-block; margin-right: 1rem; }
/* Event names and URLs are long words: a phone breaks them anywhere rather than scrolling sideways. */
@media (max-width: 40rem) { .webhook-table td, .webhook-table th { overflow-wrap: anywhere; } }
.admin-table pre { white-space: pre-wrap; overflow-wrap: anywhere; max-width: 40rem; }
`;
