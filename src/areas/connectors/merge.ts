import { DomainError, invalid } from "../../domain/errors.js";
import { normalizeFeedType, validateFeedName } from "../../domain/feeds.js";
import { compilePatterns } from "../../domain/patterns.js";
import { CONNECTOR_DEFAULTS, type ConnectorDraft } from "./model.js";
import type { ConnectorInput } from "./schemas.js";

/**
 * Applies a create (current undefined) or partial update of a connector, following the feed
 * management conventions (docs/compat.md 5.1): omitted or null members keep their value, except
 * `username` and `password`, whose null (or '') removes them; `filters` is replaced wholesale.
 * Pure and synchronous, so the repository can run it inside its transaction. Throws invalid (400).
 * A new password is sealed at once with `seal` (credentials.ts): a draft never holds the plain text.
 */
export function mergeConnectorInput(
  current: ConnectorDraft | undefined,
  input: ConnectorInput,
  seal: (password: string) => string,
): ConnectorDraft {
  const keep = <T>(value: T | null | undefined, before: T): T =>
    value === null || value === undefined ? before : value;
  const name = connectorName(input.name ?? current?.name);
  const url = input.url === null || input.url === undefined ? current?.url : connectorUrl(input.url);
  if (url === undefined) throw invalid("CONNECTOR_URL_REQUIRED", "connector url is required");
  const feedType = input.feedType === null || input.feedType === undefined ? current?.feedType : input.feedType;
  const before = current ?? { ...CONNECTOR_DEFAULTS, username: undefined, password: undefined, filters: [] };

  const username = removable(input.username, before.username);
  if (username !== undefined && !/^[^:\p{Cc}]+$/u.test(username)) {
    // Basic credentials are `user:password`: a colon would move the boundary (RFC 7617).
    throw invalid("INVALID_CONNECTOR", "username must not contain ':' or control characters");
  }
  return {
    name,
    url,
    feedType: normalizeFeedType(feedType),
    timeoutSeconds: whole("timeout", keep(input.timeout, before.timeoutSeconds), 1, 3600),
    metadataCacheEnabled: keep(input.metadataCacheEnabled, before.metadataCacheEnabled),
    metadataCacheMinutes: whole(
      "metadataCacheMinutes",
      keep(input.metadataCacheMinutes, before.metadataCacheMinutes),
      0,
      525_600,
    ),
    metadataCacheCount: whole(
      "metadataCacheCount",
      keep(input.metadataCacheCount, before.metadataCacheCount),
      1,
      100_000,
    ),
    username,
    password: input.password ? seal(input.password) : removable(input.password, before.password),
    filters:
      input.filters === null || input.filters === undefined ? [...before.filters] : connectorFilters(input.filters),
    mergeWithLocalPackages: keep(input.mergeWithLocalPackages, before.mergeWithLocalPackages),
  };
}

/**
 * Connector names follow the feed name rules (they are referenced from feeds and appear in URLs);
 * the rule is validateFeedName's, and only its wording is changed to say "connector".
 */
function connectorName(name: unknown): string {
  try {
    return validateFeedName(name);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const code = error.code === "FEED_NAME_REQUIRED" ? "CONNECTOR_NAME_REQUIRED" : "INVALID_CONNECTOR_NAME";
    throw invalid(code, error.message.replace(/^feed name/, "connector name"), { cause: error });
  }
}

/**
 * An absolute http(s) URL, normalised (WHATWG) and without trailing '/', so that request paths can
 * be appended (`<url>/packages`). Credentials, query and fragment are refused: credentials belong
 * in username/password (the fetch guard refuses them in URLs), and the others would be cut off
 * or doubled by every path appended.
 */
function connectorUrl(input: string): string {
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw invalid("INVALID_CONNECTOR_URL", "connector url must be an absolute http or https URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid("INVALID_CONNECTOR_URL", "connector url must be an absolute http or https URL");
  }
  if (url.username !== "" || url.password !== "") {
    throw invalid("INVALID_CONNECTOR_URL", "connector url must not contain credentials; use username and password");
  }
  if (url.search !== "" || url.hash !== "") {
    throw invalid("INVALID_CONNECTOR_URL", "connector url must not have a query or a fragment");
  }
  return url.href.replace(/\/+$/, "");
}

function connectorFilters(filters: readonly string[]): string[] {
  try {
    return [...compilePatterns(filters).patterns];
  } catch (error) {
    if (error instanceof DomainError) throw invalid(error.code, `filters: ${error.message}`, { cause: error });
    throw error;
  }
}

function whole(field: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw invalid("INVALID_CONNECTOR", `${field} must be a whole number from ${min} to ${max}`);
  }
  return value;
}

/** undefined keeps, null or '' removes, anything else replaces. */
function removable(input: string | null | undefined, current: string | undefined): string | undefined {
  if (input === undefined) return current;
  return input === null || input === "" ? undefined : input;
}
