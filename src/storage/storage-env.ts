import {
  checkObjectStoreSupport,
  findStorageType,
  type StorageConfig,
  validateStorageConfig,
} from "../domain/package-store.js";
import { DomainError } from "../domain/errors.js";

/**
 * The server-wide default package store, from the environment: `WHARF_PACKAGE_STORE` names the
 * kind (disk, s3 or azure; disk when unset) and each of the kind's seed properties comes from
 * `WHARF_<KIND>_<PROPERTY>` in upper snake case (`WHARF_S3_SECRET_ACCESS_KEY`,
 * `WHARF_AZURE_CONNECTION_STRING`, ...): the names are derived from the seed's property names, so
 * they cannot drift from `/api/storage`. Undefined means the data directory's disk store. Throws
 * an Error naming the variable (never its value) for config.ts to report.
 */
export function defaultStorageFromEnv(env: Readonly<Record<string, string | undefined>>): StorageConfig | undefined {
  const kind = env.WHARF_PACKAGE_STORE?.trim() ?? "";
  if (kind === "" || kind.toLowerCase() === "disk") return undefined;
  const type = findStorageType(kind);
  if (type === undefined) {
    throw new Error(`WHARF_PACKAGE_STORE: '${kind}' is not disk, s3 or azure`);
  }
  const properties: Record<string, string> = {};
  for (const name of Object.keys(type.properties)) {
    const value = env[storageEnvName(type.id, name)];
    if (value !== undefined && value !== "") properties[name] = value;
  }
  try {
    const config = validateStorageConfig({ id: type.id, properties });
    checkObjectStoreSupport(config);
    return config;
  } catch (error) {
    // The message names the property; say which variable holds it (never its value).
    const reason = error instanceof DomainError ? error.message : String(error);
    throw new Error(`WHARF_PACKAGE_STORE=${type.id}: ${reason} (set it with WHARF_${type.id.toUpperCase()}_*)`);
  }
}

/** `WHARF_S3_SECRET_ACCESS_KEY` for ("s3", "SecretAccessKey"). */
export function storageEnvName(kind: string, property: string): string {
  return `WHARF_${kind.toUpperCase()}_${property.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase()}`;
}
