import { type SecretBox, SecretUnreadableError } from "../../storage/secrets.js";
import type { Connector } from "./model.js";
import type { ConnectorRepository } from "./repository.js";
import { secretUnreadable } from "./upstream-errors.js";

/**
 * A connector's password is kept sealed (storage/secrets.ts) from the moment it arrives: the
 * model, the repository and every log line only ever hold the sealed text, and it is opened only
 * to build the Authorization header of a request to the upstream.
 */

/** Authenticated data of every sealed connector password: it opens as nothing else. */
const PURPOSE = "connector-password";

export function sealPassword(secrets: SecretBox, plaintext: string): string {
  return secrets.seal(plaintext, PURPOSE);
}

/** What builds a connector's Basic credentials (RFC 7617) for its upstream, when it has any. */
export type Authorization = (connector: Connector) => Record<string, string>;

/** Throws unavailable CONNECTOR_SECRET_UNREADABLE when the password does not open with the configured keys. */
export function basicAuthorization(secrets: SecretBox): Authorization {
  return (connector): Record<string, string> => {
    if (connector.username === undefined && connector.password === undefined) return {};
    let password = "";
    if (connector.password !== undefined) {
      try {
        password = secrets.open(connector.password, PURPOSE);
      } catch (error) {
        if (error instanceof SecretUnreadableError) throw secretUnreadable(connector, error.message);
        throw error;
      }
    }
    const pair = `${connector.username ?? ""}:${password}`;
    return { authorization: `Basic ${Buffer.from(pair, "utf8").toString("base64")}` };
  };
}

/** What start-up found: passwords sealed again (plaintext or an old key), and those no key opens. */
export interface ResealResult {
  readonly resealed: number;
  readonly unreadable: readonly { readonly connector: string; readonly reason: string }[];
}

/**
 * Seals under the current key every stored password that is not (one stored in plain text by an
 * older Wharf, or sealed under a previous key): run at every start, and a no-op once done. A
 * password no configured key opens is left as it is, so that giving the right key later still
 * recovers it.
 */
export async function resealPasswords(repository: ConnectorRepository, secrets: SecretBox): Promise<ResealResult> {
  const unreadable: { connector: string; reason: string }[] = [];
  const resealed = await repository.resealPasswords((connector, stored) => {
    try {
      return secrets.reseal(stored, PURPOSE);
    } catch (error) {
      if (!(error instanceof SecretUnreadableError)) throw error;
      unreadable.push({ connector, reason: error.message });
      return undefined;
    }
  });
  return { resealed, unreadable };
}
