import fs from "node:fs";
import type { Config } from "../config.js";
import { dataPaths } from "../storage/data-paths.js";
import type { Db } from "../storage/database.js";
import { parseSecretKey, type SecretKey } from "../storage/secrets.js";
import { quoted, type SharedTable } from "./cluster-import-schema.js";

/**
 * Stored credentials (connector passwords, SSH credentials, object store keys, webhook secrets)
 * are copied sealed, as they are: the cluster's nodes open them only with the key that sealed
 * them, which must therefore be the key every node is given (WHARF_SECRET_KEY). This finds that
 * key and refuses an import whose key would leave them unreadable.
 */

export class SecretKeyMismatchError extends Error {
  override readonly name = "SecretKeyMismatchError";
}

export interface ImportKey {
  /** Undefined when there is none: no key given, no key file, nothing sealed. */
  readonly id: string | undefined;
  /** Where the nodes' WHARF_SECRET_KEY must come from, for the operator. */
  readonly source: string;
  /** Sealed values found in the database (all of them sealed under this key). */
  readonly sealedValues: number;
}

/** `v1:<key id>:...` (storage/secrets.ts), also inside JSON documents such as a feed's settings. */
const SEALED = /v1:([0-9a-f]{16}):[A-Za-z0-9+/]+={0,2}:[A-Za-z0-9+/]+={0,2}:/g;

/**
 * The key the cluster must use: WHARF_SECRET_KEY (or _FILE) if given, else the data directory's
 * own `secret-key`. Throws SecretKeyMismatchError when the key given is not the data directory's,
 * or when a stored value was sealed under another key.
 */
export function importKey(
  config: Pick<Config, "dataDir" | "secretKeys">,
  sqlite: Db,
  tables: readonly SharedTable[],
): ImportKey {
  const ownFile = dataPaths(config.dataDir).secretKey;
  const own = fs.existsSync(ownFile) ? parseSecretKey(fs.readFileSync(ownFile, "utf8")) : undefined;
  const given = givenKey(config);
  if (given !== undefined && own !== undefined && given.key.id !== own.id) {
    throw new SecretKeyMismatchError(
      `the secret key given (${given.source}, key ${given.key.id}) is not the data directory's (${ownFile}, key ${own.id}): ` +
        "the cluster must use the key that sealed the stored credentials",
    );
  }
  const key = given?.key ?? own;
  const source =
    given?.source ?? `the contents of ${ownFile}, the data directory's key (give it to every node as WHARF_SECRET_KEY)`;
  const ids = sealedKeyIds(sqlite, tables);
  const sealedValues = [...ids.values()].reduce((sum, count) => sum + count, 0);
  const strangers = [...ids.keys()].filter((id) => id !== key?.id);
  if (strangers.length > 0) {
    throw new SecretKeyMismatchError(
      key === undefined
        ? `stored credentials are sealed under key ${strangers.join(", ")}, and no key is given: set WHARF_SECRET_KEY to the key the single node used`
        : `stored credentials are sealed under key ${strangers.join(", ")}, not under the key used (${key.id}): ` +
            "start the single node once with WHARF_SECRET_KEY and the old key in WHARF_SECRET_KEY_PREVIOUS, so that it seals them again, then import",
    );
  }
  return { id: key?.id, source, sealedValues };
}

function givenKey(config: Pick<Config, "secretKeys">): { key: SecretKey; source: string } | undefined {
  const { key, file } = config.secretKeys;
  if (key !== undefined) {
    const parsed = parseSecretKey(key);
    if (parsed === undefined)
      throw new SecretKeyMismatchError("WHARF_SECRET_KEY must hold 32 bytes as 64 hex digits or base64");
    return { key: parsed, source: "WHARF_SECRET_KEY" };
  }
  if (file === undefined) return undefined;
  const parsed = parseSecretKey(fs.readFileSync(file, "utf8"));
  if (parsed === undefined) throw new SecretKeyMismatchError(`WHARF_SECRET_KEY_FILE: ${file} does not hold a key`);
  return { key: parsed, source: `WHARF_SECRET_KEY_FILE (${file})` };
}

/** How many sealed values each key id sealed, over every text column of every table copied. */
function sealedKeyIds(sqlite: Db, tables: readonly SharedTable[]): Map<string, number> {
  const ids = new Map<string, number>();
  for (const table of tables) {
    for (const column of table.columns) {
      const select = sqlite.prepare<[], { value: string }>(
        `SELECT ${quoted(column)} AS value FROM ${quoted(table.name)}
         WHERE typeof(${quoted(column)}) = 'text' AND ${quoted(column)} LIKE '%v1:%'`,
      );
      for (const { value } of select.iterate()) {
        for (const match of value.matchAll(SEALED)) {
          const id = match[1] as string;
          ids.set(id, (ids.get(id) ?? 0) + 1);
        }
      }
    }
  }
  return ids;
}
