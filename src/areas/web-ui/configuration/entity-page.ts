import type { FastifyReply, FastifyRequest } from "fastify";
import { CONFIGURATION_MANAGE } from "../../configuration/configuration-routes.js";
import type { EntityType } from "../../configuration/remediation-repository.js";
import type { StatusObject } from "../../configuration/status.js";
import type { WebUiDeps } from "../index.js";
import { sendNotFound } from "../pages/access.js";
import { defineView, sendPage } from "../views.js";
import {
  type CheckView,
  checkView,
  entityUrl,
  isMoving,
  type ItemView,
  itemView,
  jobView,
  statusView,
  type StatusView,
} from "./present.js";
import type { Collection } from "../../configuration/collections-repository.js";
import type { ServerSummary } from "../../configuration/infrastructure-repository.js";
import type { RemediationJobs } from "./remediation-jobs.js";
import { ACTIONS, ENTITY, JOB_TABLE, STATUS_BADGE, STATUS_TABLE } from "./templates.js";

defineView("configuration-status-badge", STATUS_BADGE);
defineView("configuration-status-table", STATUS_TABLE);
defineView("configuration-job-table", JOB_TABLE);
defineView("configuration-actions", ACTIONS);
const ENTITY_VIEW = defineView("configuration-entity", ENTITY);

/** The path segment of each kind's pages, and back. */
export const KINDS: Readonly<Record<string, EntityType>> = {
  servers: "server",
  roles: "role",
  environments: "environment",
};

/** What the remediate form held, shown again (escaped) when the service refuses it. */
export interface RemediateForm {
  readonly job: string;
  readonly start: string;
  readonly simulate: boolean;
}

export const EMPTY_REMEDIATE_FORM: RemediateForm = { job: "", start: "", simulate: false };

export interface EntityPageOptions {
  readonly form?: RemediateForm;
  readonly message?: string;
  readonly notice?: string;
}

/** The pages' own reads (recent jobs and checks), made once at registration. */
export interface EntityReads {
  readonly jobs: RemediationJobs;
  readonly recentChecks: (serverId: number) => Promise<Collection[]>;
}

const byKey = (type: EntityType, name: string) => `${type}:${name.toLowerCase()}`;

/**
 * A server's, role's or environment's page: its status (the API's status object), for a server its
 * roles, environments and the items of its last completed check with what differs; for a role or
 * an environment its servers with theirs; the remediation jobs; and, for those the API lets check
 * and remediate, the forms. 404 page for an unknown name. The caller decided the viewer may view.
 */
export async function sendEntityPage(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: WebUiDeps,
  { jobs, recentChecks }: EntityReads,
  type: EntityType,
  name: string,
  options: EntityPageOptions = {},
) {
  const { infrastructure } = deps.configuration;
  const status = deps.configurationRuntime.status;
  const ref =
    type === "server"
      ? await infrastructure.findServer(name)
      : type === "role"
        ? await infrastructure.findRole(name)
        : await infrastructure.findEnvironment(name);
  if (ref === undefined) return sendNotFound(request, reply, `There is no ${type} named '${name}'.`);
  const own = statusView(await status.statusOf(type, ref.name));
  const all = new Map<string, StatusObject>((await status.allStatuses()).map((o) => [byKey(o.type, o.name), o]));
  const serverRows = (ids: readonly { name: string }[]): StatusView[] =>
    ids.flatMap((server) => {
      const object = all.get(byKey("server", server.name));
      return object === undefined ? [] : [statusView(object)];
    });
  const link = (linkType: EntityType) => (entry: { name: string }) => ({
    name: entry.name,
    url: entityUrl(linkType, entry.name),
  });

  let items: ItemView[] | undefined;
  let checks: CheckView[] | undefined;
  let servers: StatusView[] | undefined;
  let links: { title: string; entries: { name: string; url: string }[] }[];
  if (type === "server") {
    items = (await status.itemsOf(ref.name)).map(itemView);
    checks = (await recentChecks(ref.id)).map(checkView);
    links = [
      { title: "Roles", entries: (await infrastructure.serverRoles(ref.id)).map(link("role")) },
      { title: "Environments", entries: (await infrastructure.serverEnvironments(ref.id)).map(link("environment")) },
    ];
  } else if (type === "role") {
    const members: ServerSummary[] = [];
    for (const id of await status.serversWithRole(ref.id)) {
      const server = await infrastructure.getServer(id);
      if (server !== undefined) members.push(server);
    }
    servers = serverRows(members.sort((a, b) => a.name.localeCompare(b.name)));
    links = [{ title: "Depends on", entries: (await infrastructure.roleDependencies(ref.id)).map(link("role")) }];
  } else {
    servers = serverRows(await infrastructure.environmentServers(ref.id));
    links = [];
  }
  const jobRows = (
    type === "server" ? await jobs.recentOfServer(ref.id) : await jobs.recentOfEntity(type, ref.name)
  ).map((job) => jobView(job, deps.clock.now()));
  const base = entityUrl(type, ref.name);
  const actions = (await request.can(CONFIGURATION_MANAGE))
    ? {
        what: type === "server" ? "this server" : `this ${type}'s servers`,
        // A role's remediation changes only its own items (the API's role target).
        remediates:
          type === "role"
            ? "this role's items on its servers"
            : type === "server"
              ? "this server"
              : "this environment's servers",
        check: `${base}/check`,
        remediate: `${base}/remediate`,
        form: options.form ?? EMPTY_REMEDIATE_FORM,
        message: options.message,
        notice: options.notice,
      }
    : undefined;
  const live = isMoving(own.status) || (servers ?? []).some((s) => isMoving(s.status)) || jobRows.some((j) => j.moving);
  return sendPage(request, reply, ENTITY_VIEW, {
    title: `${ref.name} (${type})`,
    kind: type,
    status: own,
    links,
    items,
    drifted: items?.filter((item) => item.status === "drifted").length ?? 0,
    servers,
    checks,
    jobs: jobRows,
    actions,
    live,
  });
}
