import { invalid } from "../../domain/errors.js";
import type { DeliveryBody } from "./model.js";

/**
 * A webhook's URL template: `{feed}`, `{group}`, `{name}`, `{version}` and `{event}` are replaced by
 * the event's values, URL-encoded (an absent value is empty). Placeholders may appear in the path
 * and query only: a package's name must never choose the host its event is sent to.
 */
export const URL_PLACEHOLDERS = ["feed", "group", "name", "version", "event"] as const;
type Placeholder = (typeof URL_PLACEHOLDERS)[number];

const PLACEHOLDER = /\{([^{}]*)\}/g;
const MAX_URL_LENGTH = 4096;

/** Throws invalid WEBHOOK_URL_INVALID unless the template is one this module can render safely. */
export function checkUrlTemplate(template: string): void {
  const refuse = (why: string) => invalid("WEBHOOK_URL_INVALID", `The webhook URL ${why}.`);
  if (template.length === 0 || template.length > MAX_URL_LENGTH)
    throw refuse(`must be 1 to ${MAX_URL_LENGTH} characters`);
  const origin = /^https?:\/\/[^/?#]*/i.exec(template)?.[0];
  if (origin === undefined) throw refuse("must start with http:// or https:// and a host");
  if (/[{}]/.test(origin)) throw refuse("may hold placeholders in its path and query only, not in its host");
  for (const [, name = ""] of template.matchAll(PLACEHOLDER)) {
    if (!(URL_PLACEHOLDERS as readonly string[]).includes(name)) {
      throw refuse(
        `names an unknown placeholder {${name}} (known: ${URL_PLACEHOLDERS.map((p) => `{${p}}`).join(" ")})`,
      );
    }
  }
  if (/[{}]/.test(template.replace(PLACEHOLDER, ""))) throw refuse("holds an unmatched { or }");
  try {
    new URL(renderUrl(template, SAMPLE));
  } catch {
    throw refuse("is not a valid absolute URL");
  }
}

/**
 * Throws invalid WEBHOOK_URL_UNRENDERABLE when a value is "." or ".." and lands in the path: URL
 * parsing removes such a segment (percent-encoded too) and would climb the receiver's path.
 */
export function renderUrl(template: string, values: Readonly<Record<Placeholder, string>>): string {
  const pathEnd = template.search(/[?#]/);
  return template.replace(PLACEHOLDER, (_match, name: Placeholder, offset: number) => {
    const value = values[name] ?? "";
    if (/^\.{1,2}$/.test(value) && (pathEnd === -1 || offset < pathEnd)) {
      throw invalid("WEBHOOK_URL_UNRENDERABLE", `The {${name}} '${value}' cannot be placed in the URL's path.`);
    }
    return encodeURIComponent(value);
  });
}

/** The values of a delivery's body. */
export function urlValuesOf(body: DeliveryBody): Record<Placeholder, string> {
  return {
    feed: body.feed?.name ?? "",
    group: body.package?.group ?? "",
    name: body.package?.name ?? "",
    version: body.package?.version ?? "",
    event: body.event,
  };
}

const SAMPLE: Record<Placeholder, string> = {
  feed: "feed",
  group: "group",
  name: "name",
  version: "1.0.0",
  event: "package.added",
};
