import { type DomainError, invalid } from "./errors.js";

/**
 * Settings that clients can send (docs/compat.md 5.2, 5.4) but that Wharf does not act on yet are
 * refused when they would turn on what does not exist, instead of being stored and echoed back as
 * if they worked (issue 12). The value that describes what Wharf does (usually "off") is always
 * accepted, because clients such as pgutil send back every member a GET returned. The stored
 * format is unchanged, so the issue that implements a setting only lifts its refusal.
 */

/** `field: <feature> is not implemented yet in Wharf; send <accepted> (or omit it)`. */
export function settingNotImplemented(field: string, feature: string, accepted: string): DomainError {
  return invalid(
    "SETTING_NOT_IMPLEMENTED",
    `${field}: ${feature} is not implemented yet in Wharf; send ${accepted} (or omit it)`,
  );
}

/** A setting that has a meaning for other feed types only: `field: applies to <where> only; send <accepted>`. */
export function settingNotApplicable(field: string, where: string, accepted: string): DomainError {
  return invalid("SETTING_NOT_APPLICABLE", `${field}: applies to ${where} only; send ${accepted} (or omit it)`);
}
