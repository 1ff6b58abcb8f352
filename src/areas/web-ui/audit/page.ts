import { Readable } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError } from "../../../domain/errors.js";
import { STATUS_BY_KIND } from "../../../http/errors.js";
import type { AuditLog } from "../../audit/index.js";
import { auditFilterOf } from "../../audit/schemas.js";
import { ADMINISTER } from "../../security/model.js";
import { BROWSE_PAGE, requireView } from "../pages/access.js";
import { formatDate, PAGE_SIZE, queryText } from "../pages/present.js";
import { defineView, sendPage } from "../views.js";

const FILTERS = ["from", "to", "actor", "action", "object"] as const;

const AUDIT = `<% layout("@layout") %>
<p class="crumbs"><a href="/admin">Administration</a></p>
<h1>Audit log</h1>
<p class="muted">Every change made through the APIs, the web UI and the command line, and every refused
authorisation, newest first. Records cannot be edited or deleted; they are kept for <%= it.retention %>.</p>
<form method="get" action="/admin/audit" class="audit-filters" role="search">
  <div><label for="audit-from">From (UTC)</label><input id="audit-from" name="from" value="<%= it.query.from %>" placeholder="2026-01-31T00:00:00Z"></div>
  <div><label for="audit-to">To (UTC)</label><input id="audit-to" name="to" value="<%= it.query.to %>" placeholder="2026-02-01"></div>
  <div><label for="audit-actor">Actor</label><input id="audit-actor" name="actor" value="<%= it.query.actor %>"></div>
  <div><label for="audit-action">Action starts with</label><input id="audit-action" name="action" value="<%= it.query.action %>" placeholder="DELETE"></div>
  <div><label for="audit-object">Object contains</label><input id="audit-object" name="object" value="<%= it.query.object %>" placeholder="feed=main"></div>
  <div class="actions"><button type="submit">Filter</button><a href="/admin/audit">Clear</a></div>
</form>
<% if (it.message) { %><p class="error" role="alert"><%= it.message %></p><% } %>
<% if (it.records.length === 0) { %><p class="muted">No record matches.</p><% } else { %>
<table class="audit">
<thead><tr><th scope="col">When</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Object</th><th scope="col">Outcome</th><th scope="col" class="wide">Address</th></tr></thead>
<tbody>
<% for (const record of it.records) { %>
<tr>
  <td><time datetime="<%= record.at %>"><%= record.when %></time></td>
  <td><%= record.actor %></td>
  <td><code><%= record.action %></code></td>
  <td><%= record.object %></td>
  <td class="outcome-<%= record.outcome %>"><%= record.status %> <%= record.outcome %></td>
  <td class="wide"><%= record.address %></td>
</tr>
<% } %>
</tbody>
</table>
<% } %>
<p><% if (it.olderUrl) { %><a href="<%= it.olderUrl %>" rel="next">Older records</a> · <% } %><a href="<%= it.exportUrl %>">Export as JSON lines</a></p>
`;
const AUDIT_VIEW = defineView("audit", AUDIT);

/**
 * GET /admin/audit (filters as `/api/audit`, keyset paging with `after`) and
 * GET /admin/audit/export (its JSON lines): for whoever may read `/api/audit` (ADMINISTER), through
 * the same audit log and the same filter parsing.
 */
export function registerAuditPage(app: FastifyInstance, audit: AuditLog, retentionDays: number): void {
  app.get("/admin/audit", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    const query = filterQuery(request);
    const shown = { ...query, retention: retentionDays === 0 ? "ever" : `${retentionDays} days` };
    let filter;
    try {
      const after = queryText(request.query, "after");
      filter = auditFilterOf(after === undefined ? query : { ...query, after });
    } catch (error) {
      return refused(request, reply, error, shown);
    }
    const page = await audit.page(filter, PAGE_SIZE);
    const records = page.records.map((record) => ({
      ...record,
      when: formatDate(record.at),
      actor: record.actor.name === "" ? record.actor.kind : `${record.actor.name} (${record.actor.kind})`,
    }));
    return sendPage(request, reply, AUDIT_VIEW, {
      title: "Audit log",
      query,
      retention: shown.retention,
      records,
      olderUrl: page.next === undefined ? undefined : urlWith("/admin/audit", query, page.next),
      exportUrl: urlWith("/admin/audit/export", query),
    });
  });

  app.get("/admin/audit/export", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    const query = filterQuery(request);
    let filter;
    try {
      filter = auditFilterOf(query);
    } catch (error) {
      return refused(request, reply, error, { ...query, retention: "" });
    }
    return reply
      .type("application/x-ndjson; charset=utf-8")
      .header("Content-Disposition", 'attachment; filename="wharf-audit.jsonl"')
      .send(Readable.from(audit.exportLines(filter)));
  });
}

/** The filters as given (each '' when absent), to show them again in the form. */
function filterQuery(request: FastifyRequest): Record<(typeof FILTERS)[number], string> {
  const entries = FILTERS.map((name) => [name, queryText(request.query, name)?.trim() ?? ""] as const);
  return Object.fromEntries(entries) as Record<(typeof FILTERS)[number], string>;
}

function urlWith(path: string, query: Record<string, string>, after?: number): string {
  const params = new URLSearchParams(Object.entries(query).filter(([, value]) => value !== ""));
  if (after !== undefined) params.set("after", String(after));
  const text = params.toString();
  return text === "" ? path : `${path}?${text}`;
}

function refused(request: FastifyRequest, reply: FastifyReply, error: unknown, query: Record<string, string>) {
  if (!(error instanceof DomainError)) throw error;
  return sendPage(request, reply.code(STATUS_BY_KIND[error.kind]), AUDIT_VIEW, {
    title: "Audit log",
    query,
    retention: query.retention,
    records: [],
    message: error.message,
    exportUrl: "/admin/audit/export",
  });
}
