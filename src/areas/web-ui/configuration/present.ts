import type { EntityType } from "../../configuration/remediation-repository.js";
import type { RemediationState } from "../../configuration/remediation.js";
import type { ConfigurationStatus, ItemObject, StatusObject } from "../../configuration/status.js";
import { formatDate } from "../pages/present.js";
import type { RemediationJobRow } from "./remediation-jobs.js";

/**
 * What the configuration pages show of the status service's objects: a word per status (and a
 * class for its colour: the word is always there, colour only helps), dates as the other pages
 * write them, and URLs built with encodeURIComponent. Every string is escaped by the templates.
 */
const STATUS_WORDS: Readonly<Record<ConfigurationStatus, string>> = {
  current: "Current",
  drifted: "Drifted",
  unknown: "Unknown",
  error: "Error",
  executing: "Checking",
  pendingRemediation: "Remediation pending",
  disabled: "Disabled",
};

const STATE_WORDS: Readonly<Record<RemediationState, string>> = {
  pending: "Pending",
  running: "Running",
  completed: "Completed",
  faulted: "Faulted",
  disabled: "Canceled",
};

/** The order of the overview's counts: what needs attention first. */
export const STATUS_ORDER: readonly ConfigurationStatus[] = [
  "error",
  "drifted",
  "pendingRemediation",
  "executing",
  "unknown",
  "current",
  "disabled",
];

const PLURAL: Readonly<Record<EntityType, string>> = { server: "servers", role: "roles", environment: "environments" };

export const entityUrl = (type: EntityType, name: string) =>
  `/configuration/${PLURAL[type]}/${encodeURIComponent(name)}`;
export const jobUrl = (id: number) => `/configuration/jobs/${id}`;

/** Status objects' dates are yyyy-MM-ddTHH:mm:ss in UTC. */
const seedDateText = (date: string | null | undefined) => (date ? formatDate(`${date}Z`) : undefined);

export interface StatusView {
  readonly name: string;
  readonly url: string;
  readonly status: ConfigurationStatus;
  readonly word: string;
  readonly errorText: string | undefined;
  readonly lastCheck: string | undefined;
  readonly remediation: { readonly date: string | undefined; readonly url: string } | undefined;
}

export function statusView(object: StatusObject): StatusView {
  return {
    name: object.name,
    url: entityUrl(object.type, object.name),
    status: object.status,
    word: STATUS_WORDS[object.status],
    errorText: object.errorText,
    lastCheck: seedDateText(object.collectionDate),
    remediation:
      object.remediationId === undefined
        ? undefined
        : { date: seedDateText(object.remediationDate), url: jobUrl(object.remediationId) },
  };
}

/** How many of the objects have each status, in STATUS_ORDER, only those with any. */
export function statusCounts(objects: readonly StatusObject[]): { word: string; status: string; count: number }[] {
  return STATUS_ORDER.map((status) => ({
    status,
    word: STATUS_WORDS[status],
    count: objects.filter((object) => object.status === status).length,
  })).filter((entry) => entry.count > 0);
}

/** Whether a page shows something still moving (it refreshes itself while so, with JavaScript). */
export const isMoving = (status: ConfigurationStatus | RemediationState) =>
  status === "executing" || status === "pending" || status === "running";

export interface ItemView {
  readonly type: string;
  readonly key: string;
  readonly role: string | undefined;
  readonly roleUrl: string | undefined;
  readonly status: string;
  readonly differences: readonly { property: string; desired: string; actual: string }[];
  readonly errorText: string | undefined;
}

/** A value the engine reports (hashes, modes, versions, booleans) as text; null is "none". */
const valueText = (value: unknown) => (value === null || value === undefined ? "(none)" : String(value));

export function itemView(item: ItemObject): ItemView {
  const differences = (item.differences ?? []).map((entry) => {
    const difference = (entry ?? {}) as { property?: unknown; desired?: unknown; actual?: unknown };
    return {
      property: valueText(difference.property),
      desired: valueText(difference.desired),
      actual: valueText(difference.actual),
    };
  });
  return {
    type: item.type,
    key: item.key,
    role: item.collectionRole ?? undefined,
    roleUrl: item.collectionRole === null ? undefined : entityUrl("role", item.collectionRole),
    status: item.status,
    differences,
    errorText: item.errorText,
  };
}

export interface JobView {
  readonly id: number;
  readonly url: string;
  readonly title: string;
  readonly entity: { readonly type: EntityType; readonly name: string; readonly url: string };
  readonly simulate: boolean;
  readonly state: RemediationState;
  readonly word: string;
  readonly created: string;
  readonly notBefore: string | undefined;
  readonly started: string | undefined;
  readonly ended: string | undefined;
}

export function jobView(job: RemediationJobRow): JobView {
  return {
    id: job.id,
    url: jobUrl(job.id),
    title: job.name ?? `Remediation ${job.id}`,
    entity: { type: job.entityType, name: job.entityName, url: entityUrl(job.entityType, job.entityName) },
    simulate: job.simulate,
    state: job.state,
    word: STATE_WORDS[job.state],
    created: formatDate(job.createdAt),
    notBefore: job.notBefore === undefined ? undefined : formatDate(job.notBefore),
    started: job.startedAt === undefined ? undefined : formatDate(job.startedAt),
    ended: job.endedAt === undefined ? undefined : formatDate(job.endedAt),
  };
}
