import { invalid } from "../../domain/errors.js";

/**
 * The Package deployment record's fields (docs/seed-api.md "Package deployment record"; docs/compat.md 6.2)
 * as they arrive in a POST body or in a download's X-ProGet-Deployment-* headers (docs/compat.md 2.4),
 * validated once for both. Names are the seed's PascalCase ones; callers look them up
 * case-insensitively (ASP.NET binds them so, docs/compat.md 0.1). Pure: no Fastify, no SQLite.
 */

/** What a deployment says besides the package: the same whether posted or announced with a download. */
export interface DeploymentDetails {
  readonly application: string;
  readonly description: string;
  readonly target: string;
  /** Absent: the service names the caller. */
  readonly userName?: string | undefined;
  /** http(s) only. */
  readonly url?: string | undefined;
  /** Absent: now, from the service's clock. */
  readonly date?: Date | undefined;
}

/** A posted record: the package it names, and its details. */
export interface DeploymentInput {
  readonly feedName: string;
  /** "" for no group. */
  readonly groupName: string;
  readonly packageName: string;
  readonly version: string;
  readonly details: DeploymentDetails;
}

/** Field values by lowercased name, already trimmed; absent or blank fields are missing. */
export type FieldValues = ReadonlyMap<string, string>;

/** Bounds of stored text: generous for names, more for a summary or a link. */
const MAX_TEXT = 500;
const MAX_DESCRIPTION = 4_000;
const MAX_URL = 2_000;

const REQUIRED_POSTED = ["Application", "Description", "Target", "FeedName", "PackageName", "Version"] as const;

/** Every field of the record, by lowercased name -> its spelling in the seed (for messages). */
export const DEPLOYMENT_FIELDS: ReadonlyMap<string, string> = new Map(
  [...REQUIRED_POSTED, "GroupName", "UserName", "Url", "Date"].map((name) => [name.toLowerCase(), name]),
);

/** A POST body's record; 400 naming every missing field, or the first invalid one. */
export function parseDeploymentInput(fields: FieldValues): DeploymentInput {
  const missing = REQUIRED_POSTED.filter((name) => !fields.has(name.toLowerCase()));
  if (missing.length > 0) throw missingFields(missing);
  return {
    feedName: text(fields, "FeedName", MAX_TEXT),
    groupName: optionalText(fields, "GroupName", MAX_TEXT) ?? "",
    packageName: text(fields, "PackageName", MAX_TEXT),
    version: text(fields, "Version", MAX_TEXT),
    details: parseDeploymentDetails(fields),
  };
}

/** The details alone (Application, Description, Target required; UserName, Url, Date optional). */
export function parseDeploymentDetails(fields: FieldValues): DeploymentDetails {
  const missing = (["Application", "Description", "Target"] as const).filter((name) => !fields.has(name.toLowerCase()));
  if (missing.length > 0) throw missingFields(missing);
  const url = optionalText(fields, "Url", MAX_URL);
  const date = optionalText(fields, "Date", MAX_TEXT);
  return {
    application: text(fields, "Application", MAX_TEXT),
    description: text(fields, "Description", MAX_DESCRIPTION),
    target: text(fields, "Target", MAX_TEXT),
    userName: optionalText(fields, "UserName", MAX_TEXT),
    url: url === undefined ? undefined : parseHttpUrl(url),
    date: date === undefined ? undefined : parseDeploymentDate(date),
  };
}

function missingFields(names: readonly string[]) {
  const list = names.map((name) => `'${name}'`).join(", ");
  return invalid("DEPLOYMENT_FIELD_MISSING", `Missing required field${names.length > 1 ? "s" : ""}: ${list}.`);
}

function text(fields: FieldValues, name: string, max: number): string {
  const value = optionalText(fields, name, max);
  if (value === undefined) throw missingFields([name]);
  return value;
}

function optionalText(fields: FieldValues, name: string, max: number): string | undefined {
  const value = fields.get(name.toLowerCase());
  if (value === undefined) return undefined;
  if (value.length > max) {
    throw invalid("INVALID_DEPLOYMENT_FIELD", `Invalid '${name}': longer than ${max} characters.`);
  }
  return value;
}

/** A link shown to people: only http(s), so that it can never be a javascript: or file: URL. */
function parseHttpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid("INVALID_DEPLOYMENT_URL", "Invalid 'Url': expected an absolute http or https URL.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid("INVALID_DEPLOYMENT_URL", "Invalid 'Url': only http and https URLs are accepted.");
  }
  return value;
}

/**
 * ISO 8601 date and time: `2024-01-02`, `2024-01-02T03:04:05Z`, `...05.1234567+01:00` (what
 * PowerShell's `Get-Date -Format o` writes). A time without a zone is UTC, as the seed says the
 * date is. Also `/Date(1704164645000)/`, what Windows PowerShell's ConvertTo-Json makes of a
 * [DateTime]. Fractions beyond milliseconds are cut: the stored form has three digits.
 */
const ISO_DATE =
  /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
const MS_JSON_DATE = /^\/Date\((-?\d{1,15})(?:[+-]\d{4})?\)\/$/;

function parseDeploymentDate(value: string): Date {
  const msJson = MS_JSON_DATE.exec(value);
  if (msJson) return checkedDate(new Date(Number(msJson[1])));
  const match = ISO_DATE.exec(value);
  if (!match) throw invalidDate();
  const [, day, time = "00:00", seconds = "00", fraction = "", zone = "Z"] = match;
  const asUtc = `${day}T${time}:${seconds}.${fraction.padEnd(3, "0").slice(0, 3)}Z`;
  const date = new Date(asUtc);
  // Date rolls 2024-02-30 over into March; a date or time that does not exist must not round-trip.
  if (Number.isNaN(date.getTime()) || date.toISOString() !== asUtc) throw invalidDate();
  return checkedDate(new Date(date.getTime() - zoneOffsetMinutes(zone) * 60_000));
}

function zoneOffsetMinutes(zone: string): number {
  if (zone.toUpperCase() === "Z") return 0;
  const sign = zone.startsWith("-") ? -1 : 1;
  const digits = zone.slice(1).replace(":", "");
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2) || "0");
  if (hours > 23 || minutes > 59) throw invalidDate();
  return sign * (hours * 60 + minutes);
}

/** Within what the stored yyyy-MM-ddTHH:mm:ss.fffZ form can hold. */
function checkedDate(date: Date): Date {
  const year = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || year < 1 || year > 9999) throw invalidDate();
  return date;
}

function invalidDate() {
  return invalid(
    "INVALID_DEPLOYMENT_DATE",
    "Invalid 'Date': expected an ISO 8601 date and time, e.g. 2024-01-02T03:04:05Z.",
  );
}
