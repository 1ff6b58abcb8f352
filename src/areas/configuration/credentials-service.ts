import type { Clock } from "../../domain/clock.js";
import { invalid, notFound } from "../../domain/errors.js";
import { type SecretBox, SecretUnreadableError } from "../../storage/secrets.js";
import {
  CREDENTIAL_KINDS,
  type Credential,
  type CredentialKind,
  type CredentialsRepository,
  type CredentialWrite,
  SEALED_PURPOSE,
} from "./credentials-repository.js";

/**
 * Stored credentials (issue 13 section 3: "credentials stored encrypted with a key from the
 * environment and never returned by any API"): what an `ssh` server logs in with. A secret is
 * validated (a private key must be one ssh2 can use), sealed at once and never leaves the
 * service: every answer is a CredentialJson, which has no field for it.
 */

/** What the API and CLI take; `privateKey` or `password` is the secret, `kind` follows from it when absent. */
export interface CredentialInput {
  readonly name?: string | undefined;
  readonly kind?: string | undefined;
  readonly userName?: string | undefined;
  readonly privateKey?: string | undefined;
  readonly password?: string | undefined;
}

/** A credential as answered: never the secret. */
export interface CredentialJson {
  readonly name: string;
  readonly kind: CredentialKind;
  readonly userName: string;
  readonly createdAt: string;
  readonly modifiedAt: string;
}

export interface CredentialsService {
  /** All, or the one named (404 when it does not exist). */
  list(name?: string): Promise<CredentialJson[]>;
  create(name: string, input: CredentialInput): Promise<CredentialJson>;
  /** Missing properties stay; a `name` renames; a new secret replaces the old one. */
  update(name: string, input: CredentialInput): Promise<CredentialJson>;
  /** 409 CREDENTIAL_IN_USE while a server uses it. */
  delete(name: string): Promise<void>;
  /** Seals again every secret not sealed under the current key (run at start). */
  resealSecrets(): Promise<{ resealed: number; unreadable: { credential: string; reason: string }[] }>;
}

/** docs/compat.md 8.2's names, as servers and roles have: ≤ 50 letters, digits, `-`, `_`, starting with a letter. */
const CREDENTIAL_NAME = /^[A-Za-z]([A-Za-z0-9_-]{0,48}[A-Za-z0-9])?$/;
/** A login name: printable, no white space (`deploy`, `DOMAIN\deploy`, `deploy@example.com`). */
const USER_NAME = /^[^\s\p{Cc}]{1,100}$/u;
const MAX_PRIVATE_KEY_CHARS = 16 * 1024;
const MAX_PASSWORD_CHARS = 1024;

export function createCredentialsService(deps: {
  readonly repository: CredentialsRepository;
  readonly secrets: SecretBox;
  readonly clock: Clock;
}): CredentialsService {
  const { repository, secrets } = deps;
  const now = () => deps.clock.now().toISOString();

  async function secretOf(input: CredentialInput, kindNow: CredentialKind | undefined) {
    const { privateKey, password } = input;
    if (privateKey !== undefined && password !== undefined) {
      throw invalid("CREDENTIAL_INVALID", "Give either 'privateKey' or 'password', not both.");
    }
    const given: CredentialKind | undefined =
      privateKey !== undefined ? "ssh-key" : password !== undefined ? "ssh-password" : undefined;
    const kind = input.kind === undefined ? (given ?? kindNow) : parseKind(input.kind);
    if (given !== undefined && kind !== given) {
      throw invalid(
        "CREDENTIAL_INVALID",
        `A credential of kind '${kind}' takes '${kind === "ssh-key" ? "privateKey" : "password"}'.`,
      );
    }
    if (kind === undefined) {
      throw invalid("CREDENTIAL_INVALID", "'privateKey' (kind ssh-key) or 'password' (kind ssh-password) is required.");
    }
    if (given === undefined) {
      // Only a change of kind needs a new secret: the stored one is of the other kind.
      if (kindNow !== kind) {
        throw invalid("CREDENTIAL_INVALID", `'${kind === "ssh-key" ? "privateKey" : "password"}' is required.`);
      }
      return { kind, sealedSecret: undefined };
    }
    const secret = (privateKey ?? password) as string;
    if (kind === "ssh-key") await checkPrivateKey(secret);
    else checkPassword(secret);
    return { kind, sealedSecret: secrets.seal(secret, SEALED_PURPOSE) };
  }

  return {
    async list(name) {
      if (name === undefined) return (await repository.list()).map(toJson);
      const credential = await repository.findByName(name);
      if (credential === undefined) throw notFound("CREDENTIAL_NOT_FOUND", `The credential '${name}' was not found.`);
      return [toJson(credential)];
    },

    async create(name, input) {
      checkName(name);
      if (input.name !== undefined && input.name !== name) {
        throw invalid("CREDENTIAL_INVALID", `The body names '${input.name}' but the URL '${name}'.`);
      }
      const userName = checkUserName(input.userName, true) as string;
      const { kind, sealedSecret } = await secretOf(input, undefined);
      const write: CredentialWrite = { name, kind, userName, sealedSecret: sealedSecret as string };
      return toJson(await repository.insert(write, now()));
    },

    async update(name, input) {
      if (input.name !== undefined) checkName(input.name);
      const userName = checkUserName(input.userName, false);
      // The current kind is needed to validate the secret: read first, then write in one step.
      const current = await repository.findByName(name);
      if (current === undefined) throw notFound("CREDENTIAL_NOT_FOUND", `The credential '${name}' was not found.`);
      const { kind, sealedSecret } = await secretOf(input, current.kind);
      const change: Partial<CredentialWrite> = {
        ...(input.name !== undefined && { name: input.name }),
        ...(userName !== undefined && { userName }),
        kind,
        ...(sealedSecret !== undefined && { sealedSecret }),
      };
      return toJson(await repository.update(name, () => change, now()));
    },

    async delete(name) {
      await repository.delete(name);
    },

    async resealSecrets() {
      const unreadable: { credential: string; reason: string }[] = [];
      const resealed = await repository.resealSecrets((credential, stored) => {
        try {
          return secrets.reseal(stored, SEALED_PURPOSE);
        } catch (error) {
          if (!(error instanceof SecretUnreadableError)) throw error;
          unreadable.push({ credential, reason: error.message });
          return undefined;
        }
      });
      return { resealed, unreadable };
    },
  };
}

function toJson(credential: Credential): CredentialJson {
  return {
    name: credential.name,
    kind: credential.kind,
    userName: credential.userName,
    createdAt: credential.createdAt,
    modifiedAt: credential.modifiedAt,
  };
}

function checkName(name: string): void {
  if (!CREDENTIAL_NAME.test(name)) {
    throw invalid(
      "INVALID_NAME",
      `Invalid credential name '${name}': use up to 50 letters, digits, '-' or '_', starting with a letter and not ending in '-' or '_'.`,
    );
  }
}

function parseKind(text: string): CredentialKind {
  const kind = text.toLowerCase();
  if (!(CREDENTIAL_KINDS as readonly string[]).includes(kind)) {
    throw invalid("CREDENTIAL_INVALID", `'kind' must be ${CREDENTIAL_KINDS.join(" or ")}, not '${text}'.`);
  }
  return kind as CredentialKind;
}

function checkUserName(userName: string | undefined, required: boolean): string | undefined {
  if (userName === undefined) {
    if (required) throw invalid("CREDENTIAL_INVALID", "'userName' is required: the user the server is logged in as.");
    return undefined;
  }
  if (!USER_NAME.test(userName)) {
    throw invalid("CREDENTIAL_INVALID", "'userName' must be 1 to 100 characters without spaces or control characters.");
  }
  return userName;
}

function checkPassword(password: string): void {
  if (password.length === 0 || password.length > MAX_PASSWORD_CHARS) {
    throw invalid("CREDENTIAL_INVALID", `'password' must be 1 to ${MAX_PASSWORD_CHARS} characters.`);
  }
}

/**
 * A private key ssh2 can log in with: OpenSSH or PEM, without a passphrase. The messages say what
 * is wrong with it, never any of its text. ssh2 is loaded only here and in the transport.
 */
async function checkPrivateKey(text: string): Promise<void> {
  if (text.length > MAX_PRIVATE_KEY_CHARS) {
    throw invalid("CREDENTIAL_INVALID", `'privateKey' is longer than ${MAX_PRIVATE_KEY_CHARS} characters.`);
  }
  const { utils } = (await import("ssh2")).default;
  const parsed = utils.parseKey(text);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (key === undefined || key instanceof Error) {
    const reason = /passphrase/i.test(key?.message ?? "")
      ? "it is protected by a passphrase, which Wharf cannot type: store it without one"
      : "it is not an OpenSSH or PEM private key";
    throw invalid("CREDENTIAL_INVALID", `'privateKey' cannot be used: ${reason}.`);
  }
  if (!key.isPrivateKey()) {
    throw invalid("CREDENTIAL_INVALID", "'privateKey' is a public key: give the private one.");
  }
}
