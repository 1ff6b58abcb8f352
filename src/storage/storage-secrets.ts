import { invalid } from "../domain/errors.js";
import { HIDDEN_SECRET, SECRET_STORAGE_PROPERTIES, type StorageConfig } from "../domain/package-store.js";
import type { SecretBox } from "./secrets.js";

/**
 * The credentials inside a feed's storage configuration (SecretAccessKey, ConnectionString): sealed
 * from the moment they arrive (storage/secrets.ts), opened only to build the store, and shown as
 * HIDDEN_SECRET in every answer. A client that reads a configuration and posts it back unchanged
 * sends HIDDEN_SECRET, which keeps the stored secret.
 */
const PURPOSE = "feed-storage";

/** The configuration as stored: each secret sealed. */
export function sealStorageSecrets(config: StorageConfig, secrets: SecretBox): StorageConfig {
  return mapSecrets(config, (value) => secrets.seal(value, PURPOSE));
}

/** The configuration with its secrets in plain text, to open the store with; never returned nor logged. */
export function openStorageSecrets(config: StorageConfig, secrets: SecretBox): StorageConfig {
  return mapSecrets(config, (value) => secrets.open(value, PURPOSE));
}

/** The configuration as answers show it. */
export function hideStorageSecrets(config: StorageConfig): StorageConfig {
  return mapSecrets(config, () => HIDDEN_SECRET);
}

/** Sealed again under the current key when a previous key sealed it; undefined when nothing changes. */
export function resealStorageSecrets(config: StorageConfig, secrets: SecretBox): StorageConfig | undefined {
  let changed = false;
  const resealed = mapSecrets(config, (value) => {
    const sealed = secrets.reseal(value, PURPOSE);
    if (sealed === undefined) return value;
    changed = true;
    return sealed;
  });
  return changed ? resealed : undefined;
}

/**
 * A configuration given by a client, ready to store: each new secret sealed, HIDDEN_SECRET replaced
 * by the stored (sealed) secret of the same property, or refused when there is none to keep (the
 * client would store the mask itself).
 */
export function sealGivenSecrets(
  given: StorageConfig,
  stored: StorageConfig | undefined,
  secrets: SecretBox,
): StorageConfig {
  return mapSecrets(given, (value, name) => {
    if (value !== HIDDEN_SECRET) return secrets.seal(value, PURPOSE);
    const kept = stored?.id === given.id ? stored.properties[name] : undefined;
    if (typeof kept !== "string") {
      throw invalid(
        "INVALID_STORAGE_CONFIG",
        `property '${name}' shows the hidden value '${HIDDEN_SECRET}'; send the secret itself`,
      );
    }
    return kept;
  });
}

function mapSecrets(config: StorageConfig, map: (value: string, name: string) => string): StorageConfig {
  const properties = { ...config.properties };
  for (const name of SECRET_STORAGE_PROPERTIES) {
    const value = properties[name];
    if (typeof value === "string") properties[name] = map(value, name);
  }
  return { id: config.id, properties };
}
