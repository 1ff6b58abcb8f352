/**
 * HTML for the `/reference/api` pages with escaping by default: every value interpolated into a
 * `markup` template is escaped by escapeHtml() unless it is itself the result of `markup` (or `raw`,
 * for markup built here). The tag is not called `html` on purpose: Prettier reformats templates
 * tagged `html`, which would change the pages' whitespace (and the stylesheet's CSP hash). Method names, summaries and descriptions come from code, but other
 * areas write them and a description may quote XML: nothing reaches the page unescaped.
 */

/** Markup that is already safe to insert as is. */
export class SafeHtml {
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup;
  }
}

export type HtmlValue = SafeHtml | string | number | boolean | undefined | null | readonly HtmlValue[];

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** The one escape function: text and attribute values (quoted) alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.markup;
  if (value === undefined || value === null || value === false) return "";
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value as string | number | boolean));
}

/** Tagged template: `markup\`<td>${text}</td>\`` escapes `text`; nested `markup` results and arrays of them go in as they are. */
export function markup(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let markup = strings[0] ?? "";
  values.forEach((value, i) => {
    markup += render(value) + (strings[i + 1] ?? "");
  });
  return new SafeHtml(markup);
}

/** Markup made by this module's callers from constants (the stylesheet): never user or registry text. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}
