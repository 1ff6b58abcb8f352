import fs from "node:fs";
import { type Config, ConfigError } from "../config.js";
import { DATA_DIR_NAMES, dataPaths } from "./data-paths.js";
import { ensurePrivateDirectory, ensurePrivateFiles, isOpenToOthers, PRIVATE_FILE_MODE } from "./private-files.js";
import { createSecretBox, generateSecretKey, parseSecretKey, type SecretBox, type SecretKey } from "./secrets.js";

/** The box, and where its current key came from (for the start-up log: never the key itself). */
export interface LoadedSecrets {
  readonly box: SecretBox;
  readonly keyId: string;
  readonly source: "WHARF_SECRET_KEY" | "WHARF_SECRET_KEY_FILE" | "generated" | "data directory";
}

/**
 * The keys that encrypt stored secrets (storage/secrets.ts), in this order: WHARF_SECRET_KEY;
 * the file WHARF_SECRET_KEY_FILE names, which must be private (its owner's alone: a start is
 * refused otherwise, since anyone who can read it can read every stored secret); else
 * `<data>/secret-key`, generated with mode 0600 at the first start, so that Wharf works without
 * setup. WHARF_SECRET_KEY_PREVIOUS keys only decrypt: with them, values sealed under an old key
 * still open, and are sealed again under the current one at start-up (rotation, README).
 * Throws ConfigError for a missing, unreadable, invalid or non-private key file.
 */
export function loadSecretKeys(config: Pick<Config, "dataDir" | "secretKeys">): LoadedSecrets {
  const { key, file, previous } = config.secretKeys;
  const previousKeys = previous.map((text) => parseSecretKey(text) as SecretKey);
  const loaded = (current: SecretKey, source: LoadedSecrets["source"]): LoadedSecrets => ({
    box: createSecretBox(current, previousKeys),
    keyId: current.id,
    source,
  });
  if (key !== undefined) return loaded(parseSecretKey(key) as SecretKey, "WHARF_SECRET_KEY");
  if (file !== undefined) return loaded(readKeyFile(file, "WHARF_SECRET_KEY_FILE"), "WHARF_SECRET_KEY_FILE");

  const own = dataPaths(config.dataDir).secretKey;
  ensurePrivateDirectory(config.dataDir);
  try {
    // Exclusive: a CLI command and the server starting at once must not each write a key.
    fs.writeFileSync(own, `${generateSecretKey()}\n`, { mode: PRIVATE_FILE_MODE, flag: "wx" });
    return loaded(readKeyFile(own, DATA_DIR_NAMES.secretKey), "generated");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  // Ours to fix: narrowed rather than refused (it lives in the data directory, which is private too).
  ensurePrivateFiles([own]);
  return loaded(readKeyFile(own, DATA_DIR_NAMES.secretKey), "data directory");
}

function readKeyFile(file: string, label: string): SecretKey {
  let text: string;
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) throw new ConfigError(`${label}: ${file} is not a file`);
    if (isOpenToOthers(stat)) {
      throw new ConfigError(
        `${label}: ${file} can be read or written by others than its owner; make it private (chmod 600 ${file})`,
      );
    }
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError(`${label}: cannot read ${file} (${reason})`);
  }
  const parsed = parseSecretKey(text);
  if (parsed === undefined) {
    throw new ConfigError(`${label}: ${file} must hold 32 bytes as 64 hex digits or base64`);
  }
  return parsed;
}
