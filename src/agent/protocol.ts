import type { AppliedChange, DesiredItem, ItemResult, LogLevel } from "../drift/model.js";

/**
 * The agent protocol (issue 13 section 3; plan13 "Protocol"), shared by `wharf agent` and the
 * routes that answer it (src/areas/configuration/agent-routes.ts). Types and limits only: no
 * runtime dependency, so that the agent loads nothing of the server.
 *
 * GET  /api/agent/v1/poll?wait=<s>              -> 200 { work: WorkItem[] } | 204 (nothing within `wait`)
 * POST /api/agent/v1/work/<id>/log              { lines: LogLine[] } -> 204 (also renews the work's lease)
 * POST /api/agent/v1/work/<id>/result           WorkResult -> 204
 * GET  /api/agent/v1/work/<id>/resolve?item=<key>               -> ResolvedPackage | 404
 * GET  /api/agent/v1/work/<id>/package?item=<key>&version=<v>   -> the .upack bytes | 404
 *
 * Every request carries `Authorization: Bearer <agent key>` and `User-Agent: wharf-agent/<version>`.
 * JSON bodies are sent as AGENT_JSON_TYPE: they are read only after the key was checked.
 */
export const AGENT_API_PREFIX = "/api/agent/v1";

/** Bodies the agent posts: its own type, so that Wharf reads them only once the key is known good. */
export const AGENT_JSON_TYPE = "application/vnd.wharf.agent+json";

/** Longest a poll is held open: below the idle limit of common proxies (60 s). */
export const MAX_POLL_WAIT_SECONDS = 25;

/** Bounds of what an agent may post (larger: 413 or 400, never a 500). */
export const AGENT_LIMITS = Object.freeze({
  /** A result body (1,000 items with differences are about 300 kB). */
  resultBytes: 32 * 1024 * 1024,
  /** A log body. */
  logBytes: 1024 * 1024,
  /** Lines per log post. */
  logLines: 1000,
  /** Characters of one log line (longer lines are cut by the agent, refused by Wharf). */
  logLineChars: 8192,
  /** Results and changes of one work item: at most one per item of the work. */
  differencesPerItem: 64,
  /** Characters of a difference's value, an error text, a change's description. */
  textChars: 8192,
});

export type WorkKind = "check" | "remediate";

/** One piece of work handed to an agent. */
export interface WorkItem {
  readonly id: string;
  readonly kind: WorkKind;
  /** remediate: only report what would change. */
  readonly simulate: boolean;
  /** As validated by Wharf (src/drift/items/schema.ts), sensitive content included: HTTPS only. */
  readonly items: readonly DesiredItem[];
  /** Merged variables for templates, names lowercased. */
  readonly variables: Readonly<Record<string, string>>;
  /** Wharf fails the work when it hears nothing of it for this long: the agent posts a log (maybe empty) well within it. */
  readonly leaseSeconds: number;
}

export interface PollAnswer {
  readonly work: readonly WorkItem[];
}

export interface LogLine {
  readonly level: LogLevel;
  readonly message: string;
}

export interface WorkResult {
  readonly results: readonly ItemResult[];
  readonly changes: readonly AppliedChange[];
  /** The work could not be done at all (the root cannot be made, ...): the check or remediation fails with it. */
  readonly error?: string;
}

/** `User-Agent` of the agent: Wharf records the version (servers.agent_version). */
export function agentUserAgent(version: string): string {
  return `wharf-agent/${version}`;
}

/** The version in a `wharf-agent/<version>` User-Agent; undefined for any other. */
export function agentVersionOf(userAgent: string | undefined): string | undefined {
  const match = /^wharf-agent\/([0-9A-Za-z.+_-]{1,64})(?:\s|$)/.exec(userAgent ?? "");
  return match?.[1];
}
