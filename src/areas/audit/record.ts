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
  /** The route's parameters as `name=value` terms separated by spaces ('' when none). */
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
 * The route's parameters as `feed=main package=app` (a wildcard tail is named `path`). Never the
 * query string or the body: those can carry API keys and passwords.
 */
export function objectOf(params: unknown): string {
  if (params === null || typeof params !== "object") return "";
  const terms: string[] = [];
  for (const [name, value] of Object.entries(params as Record<string, unknown>)) {
    if (typeof value !== "string" || value === "") continue;
    terms.push(`${name === "*" ? "path" : name}=${value}`);
  }
  const text = terms.join(" ");
  return text.length > MAX_OBJECT_LENGTH ? `${text.slice(0, MAX_OBJECT_LENGTH - 1)}…` : text;
}
