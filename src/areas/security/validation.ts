import { type DomainError, invalid } from "../../domain/errors.js";

/**
 * Input checks shared by the security services. Every message starts with the member it is
 * about (`type: ...`), so that a client sees which field to fix, over HTTP and on the CLI alike.
 */

export const NAME_MAX = 256;

export function fieldError(field: string, message: string, code = "INVALID_FIELD"): DomainError {
  return invalid(code, `${field}: ${message}`);
}

/** A trimmed text, or undefined when absent, null or blank. */
export function optionalText(value: string | null | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === "" ? undefined : trimmed;
}

/** A name that identifies something (user, group, task): required, trimmed, bounded, printable. */
export function requiredName(value: string | null | undefined, field: string): string {
  const name = optionalText(value);
  if (name === undefined) throw fieldError(field, "is required", "NAME_REQUIRED");
  if (name.length > NAME_MAX) throw fieldError(field, `must be at most ${NAME_MAX} characters`, "NAME_TOO_LONG");
  if (hasControlCharacter(name)) throw fieldError(field, "must not contain control characters", "NAME_INVALID");
  return name;
}

/** Optional free text (descriptions, display names, e-mail): trimmed, bounded; blank means none. */
export function boundedText(value: string | null | undefined, field: string, max: number): string | undefined {
  const text = optionalText(value);
  if (text !== undefined && text.length > max) throw fieldError(field, `must be at most ${max} characters`);
  return text;
}

/** Names listed in an array member, deduplicated case-insensitively, each checked like a name. */
export function nameList(values: readonly (string | null)[], field: string): string[] {
  const byKey = new Map<string, string>();
  for (const value of values) {
    const name = requiredName(value, field);
    if (!byKey.has(name.toLowerCase())) byKey.set(name.toLowerCase(), name);
  }
  return [...byKey.values()];
}

/** Case-insensitive equality, the rule for every name in this area. */
export function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
