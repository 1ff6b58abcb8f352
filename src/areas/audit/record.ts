import type { Principal } from "../../domain/principal.js";

/**
 * One audit record: who did what, on what, from where, and how it ended. Every field is safe to
 * show to an administrator: names, never a key, a password or a body.
 */
export interface AuditRecord {
  readonly id: number;
  /** ISO 8601 UTC, from the application's clock. */
  readonly at: string;
  readonly actor: AuditActor;
  /** The client's address ('local' for the CLI). */
  readonly address: string;
  /** `METHOD /route/:pattern` for HTTP, `cli <command> <subcommand>` for the CLI. */
  readonly action: string;
  /** What the request works on as `name=value` terms separated by spaces ('' when none): objectOf. */
  readonly object: string;
  readonly status: number;
  readonly outcome: AuditOutcome;
  readonly requestId: string;
}

export const ACTOR_KINDS = ["anonymous", "user", "personal-key", "system-key", "feed-key", "cli"] as const;
export type ActorKind = (typeof ACTOR_KINDS)[number];

export interface AuditActor {
  readonly kind: ActorKind;
  /** A user name or a key's display name; '' for Anonymous (or the user name a refused sign-in gave). */
  readonly name: string;
}

export type AuditOutcome = "success" | "refused" | "failed";

/** A record before it is stored: the database gives it its id. */
export type AuditEntry = Omit<AuditRecord, "id">;

/** 2xx/3xx succeeded; 4xx was refused (bad input, no right, not found); 5xx failed. */
export function outcomeOf(status: number): AuditOutcome {
  if (status >= 500) return "failed";
  return status >= 400 ? "refused" : "success";
}

/** The principal as a record names it: keys by their display name (else their id), never their secret. */
export function actorOf(principal: Principal): AuditActor {
  switch (principal.type) {
    case "anonymous":
      return { kind: "anonymous", name: "" };
    case "user":
      return { kind: principal.via === "personal-key" ? "personal-key" : "user", name: principal.userName };
    case "system-key":
    case "feed-key":
      return { kind: principal.type, name: principal.displayName ?? `key #${principal.keyId}` };
  }
}

/** Longest object text kept: route parameters are bounded by the router (2 KiB each), records stay small. */
const MAX_OBJECT_LENGTH = 1024;

/**
 * Names that say what a request works on when a route takes it from the query string or the body
 * (`/api/promotions/promote`, `/api/management/feeds/create`, the releases API's forms...). Only
 * these are read there: everything else in a query or a body may be a key, a password or content.
 */
const OBJECT_FIELDS = new Set(
  [
    "feed",
    "feedName",
    "fromFeed",
    "toFeed",
    "group",
    "groupName",
    "name",
    "packageName",
    "version",
    "newVersion",
    "applicationId",
    "applicationName",
    "releaseNumber",
    "buildNumber",
    "pipelineName",
    "environmentName",
    "serverName",
    "roleName",
    "userName",
    // The sign-in form's user name (never its password).
    "user",
    "id",
  ].map((field) => field.toLowerCase()),
);

/**
 * What the request works on as `feed=main package=app`: the route's parameters (a wildcard tail is
 * named `path`), then the object fields of OBJECT_FIELDS from the query string and the body (names
 * in any case, as the APIs read them; top level only), each name once.
 */
export function objectOf(params: unknown, query?: unknown, body?: unknown): string {
  const terms = new Map<string, string>();
  for (const [name, value] of entries(params)) terms.set(name === "*" ? "path" : name, value);
  for (const source of [query, body]) {
    for (const [name, value] of entries(source)) {
      if (OBJECT_FIELDS.has(name.toLowerCase()) && !terms.has(name)) terms.set(name, value);
    }
  }
  const text = [...terms].map(([name, value]) => `${name}=${value}`).join(" ");
  return text.length > MAX_OBJECT_LENGTH ? `${text.slice(0, MAX_OBJECT_LENGTH - 1)}…` : text;
}

/** The non-empty text and number values of a parsed object (params, query or JSON/form body). */
function entries(source: unknown): [string, string][] {
  if (source === null || typeof source !== "object" || Array.isArray(source)) return [];
  const found: [string, string][] = [];
  for (const [name, value] of Object.entries(source as Record<string, unknown>)) {
    if (typeof value === "number" && Number.isFinite(value)) found.push([name, String(value)]);
    else if (typeof value === "string" && value !== "") found.push([name, value.slice(0, MAX_OBJECT_LENGTH)]);
  }
  return found;
}
