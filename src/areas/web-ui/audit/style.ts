/** Stylesheet rules of the web UI's part: the audit log (joined into /ui/style.css). */
export const AUDIT_STYLE = `
form.audit-filters { display: flex; flex-wrap: wrap; gap: 0 1rem; align-items: flex-end; margin: 1rem 0; }
form.audit-filters div { flex: 1 1 12rem; }
form.audit-filters input { width: 100%; }
form.audit-filters .actions { flex: 0 0 auto; display: flex; gap: .5rem; padding-top: .5rem; }
table.audit td { overflow-wrap: anywhere; }
.outcome-refused { color: #7a4d00; }
.outcome-failed { color: #a3161b; }
@media (prefers-color-scheme: dark) {
  .outcome-refused { color: #f0c060; }
  .outcome-failed { color: #ff9a9a; }
}
`;
