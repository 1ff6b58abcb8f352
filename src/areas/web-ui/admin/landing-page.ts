import type { FastifyInstance } from "fastify";
import { databaseUsable } from "../../../storage/metadata-db.js";
import { WHARF_VERSION } from "../../../version.js";
import { ADMINISTER } from "../../security/model.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView } from "../pages/access.js";
import { formatBytes } from "../pages/present.js";
import { defineView, sendPage } from "../views.js";

const LANDING = `<% layout("@layout") %>
<h1>Administration</h1>
<h2>Server</h2>
<dl class="facts">
  <dt>Version</dt><dd>Wharf <%= it.version %></dd>
  <dt>Database</dt><dd class="<%= it.databaseOk ? '' : 'error' %>"><%= it.databaseOk ? "OK" : "Error: the metadata database cannot be queried." %></dd>
  <dt>Disk</dt><dd class="<%= it.disk.low ? 'error' : '' %>"><%= it.disk.text %></dd>
</dl>
<p class="muted">The same facts as <a href="/health">/health</a>.</p>
<h2>Nodes</h2>
<table class="admin-table">
  <thead><tr><th scope="col">Node</th><th scope="col" class="wide">Version</th><th scope="col" class="wide">Started</th><th scope="col">Last heartbeat</th><th scope="col">State</th></tr></thead>
  <tbody>
  <% for (const node of it.nodes) { %>
    <tr>
      <td><%= node.nodeId %><%= node.self ? " (this node)" : "" %></td>
      <td class="wide"><%= node.version %></td>
      <td class="wide"><time datetime="<%= node.startedAt %>"><%= node.startedAt %></time></td>
      <td><%= node.secondsAgo %> s ago</td>
      <td class="<%= node.alive ? '' : 'error' %>"><%= node.alive ? "Alive" : "Silent" %><%= node.runsSchedulers ? ", runs the schedulers" : "" %></td>
    </tr>
  <% } %>
  </tbody>
</table>
<p class="muted"><%= it.database %>; the same list as <a href="/api/cluster/nodes">/api/cluster/nodes</a>.</p>
<h2>Manage</h2>
<ul class="admin-links">
  <li><a href="/admin/feeds">Feeds</a>: create, edit, delete, storage</li>
  <li><a href="/admin/connectors">Connectors</a>: upstream feeds and their health</li>
  <li><a href="/admin/users">Users and groups</a></li>
  <li><a href="/admin/permissions">Permissions</a>: grant and revoke privileges</li>
  <li><a href="/admin/api-keys">API keys</a></li>
  <li><a href="/admin/audit">Audit log</a>: who changed what, and refused authorisations</li>
  <li><a href="/admin/webhooks">Webhooks</a>: event deliveries and their log</li>
</ul>
`;
const LANDING_VIEW = defineView("admin-landing", LANDING);

/**
 * GET /admin: server health and version as /health reports them (database, disk, version; read
 * from the same sources) and links to every administration page. Needs what the security API
 * needs (ADMINISTER): the pages it links to each check their own API's need again.
 */
export function registerLandingPage(app: FastifyInstance, { db, disk, cluster }: WebUiDeps): void {
  app.get("/admin", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    const status = await disk.status();
    let text: string;
    if (status.freeBytes === undefined) text = "Unknown (free space cannot be read)";
    else if (status.low) text = `Low: ${formatBytes(status.freeBytes)} free, uploads are refused`;
    else text = `OK: ${formatBytes(status.freeBytes)} free`;
    return sendPage(request, reply, LANDING_VIEW, {
      title: "Administration",
      version: WHARF_VERSION,
      databaseOk: await databaseUsable(db),
      disk: { low: status.low, text },
      ...(await nodesOf(cluster)),
    });
  });
}

/** The cluster view for the page; a database that cannot answer leaves the list empty (the Database line says why). */
async function nodesOf(cluster: WebUiDeps["cluster"]) {
  try {
    const view = await cluster();
    return {
      database: view.database === "SQLite" ? "One machine, on SQLite" : "A cluster on PostgreSQL",
      nodes: view.nodes.map((node) => ({ ...node, secondsAgo: Math.round(node.secondsSinceHeartbeat) })),
    };
  } catch {
    return { database: "The nodes cannot be listed now", nodes: [] };
  }
}
