import type { EntityType } from "../../configuration/remediation-repository.js";
import type { RemediationState } from "../../configuration/remediation.js";
import type { ConfigurationStatus, ItemObject, StatusObject } from "../../configuration/status.js";
import { formatDate } from "../pages/present.js";
import type { Collection } from "../../configuration/collections-repository.js";
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

/** Whether a status is still moving (a page showing it refreshes itself while so, with JavaScript). */
export const isMoving = (status: ConfigurationStatus) => status === "executing";

/** A pending job due later than this is not waited for by refreshing (one due in 2099 would poll for ever). */
const SOON_MS = 60_000;

/** Whether a job is running or about to: its page and the lists showing it refresh themselves. */
function jobMoving(job: RemediationJobRow, now: Date): boolean {
  if (job.state === "running") return true;
  if (job.state !== "pending") return false;
  return job.notBefore === undefined || Date.parse(job.notBefore) - now.getTime() < SOON_MS;
}

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
  readonly moving: boolean;
}

export function jobView(job: RemediationJobRow, now: Date): JobView {
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
    moving: jobMoving(job, now),
  };
}

const CHECK_WORDS: Readonly<Record<Collection["status"], string>> = {
  executing: "Checking",
  completed: "Completed",
  error: "Error",
};

export interface CheckView {
  readonly started: string;
  readonly ended: string | undefined;
  readonly status: Collection["status"];
  readonly word: string;
  /** "2 drifted, 1 unknown of 5 items" for a completed check. */
  readonly found: string | undefined;
  readonly errorText: string | undefined;
  readonly jobUrl: string | undefined;
}

export function checkView(check: Collection): CheckView {
  return {
    started: formatDate(check.startedAt),
    ended: check.endedAt === undefined ? undefined : formatDate(check.endedAt),
    status: check.status,
    word: CHECK_WORDS[check.status],
    found:
      check.status === "completed"
        ? `${check.drifted} drifted, ${check.unknown} unknown of ${check.items} item${check.items === 1 ? "" : "s"}`
        : undefined,
    errorText: check.errorText,
    jobUrl: check.jobId === undefined ? undefined : jobUrl(check.jobId),
  };
}
