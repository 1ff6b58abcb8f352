import { fieldError } from "./validation.js";

/**
 * What a new password must be (NIST SP 800-63B, 3.1.1.2): long enough, not one of the passwords
 * guessers try first, not the user's own name. No rules about character classes: they make
 * passwords harder to remember, not to guess. Checked wherever a password is set (API, CLI, and
 * pages to come, all through the user service); passwords set before these rules still work.
 */
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 1024;

/** Throws 400 naming `password` and saying why, unless `password` may be set for `userName`. */
export async function checkNewPassword(password: string, userName: string): Promise<void> {
  if (password === "") throw weak("must not be empty", "PASSWORD_INVALID");
  if (password.length > PASSWORD_MAX) throw weak(`must be at most ${PASSWORD_MAX} characters`, "PASSWORD_INVALID");
  const characters = [...password];
  if (characters.length < PASSWORD_MIN) throw weak(`must be at least ${PASSWORD_MIN} characters`, "PASSWORD_TOO_SHORT");
  if (characters.every((character) => character === characters[0]) || password.trim() === "") {
    throw weak("must not be one character repeated", "PASSWORD_TOO_WEAK");
  }
  const lower = password.toLowerCase();
  if (lower === userName.toLowerCase()) throw weak("must not be the user name", "PASSWORD_TOO_WEAK");
  if ((await commonPasswords()).has(lower)) {
    throw weak("is one of the most common passwords, which are tried first; choose another", "PASSWORD_TOO_COMMON");
  }
}

const weak = (message: string, code: string) => fieldError("password", message, code);

let common: Promise<ReadonlySet<string>> | undefined;

/**
 * The 49,000 most common passwords of public breaches, as zxcvbn ranks them, lower case; loaded
 * on the first password set, not at start-up, and only those long enough to pass the first rule.
 */
function commonPasswords(): Promise<ReadonlySet<string>> {
  common ??= import("@zxcvbn-ts/language-common").then(
    ({ dictionary }) => new Set(dictionary["passwords-common"].filter((entry) => entry.length >= PASSWORD_MIN)),
  );
  return common;
}
