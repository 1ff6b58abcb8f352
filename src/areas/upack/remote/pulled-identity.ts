import { DomainError } from "../../../domain/errors.js";
import { isPlainObject, quote, samePackage } from "../../../domain/upack-manifest.js";
import { canonicalVersion } from "../../../domain/upack-version.js";
import type { BlobInfo, BlobStore } from "../../../storage/blob-store.js";
import { openZipBlob } from "../../../storage/zip.js";
import type { RemoteTarget } from "./lookup.js";
import { MAX_MANIFEST_BYTES } from "../write/upload-archive.js";

/**
 * A connector's upstream must send the package that was asked for: a ZIP whose upack.json names
 * that group, name and version (group and name ignoring case, the version by its canonical text,
 * as an upload's identity is compared with its parameters), and whose local headers agree with
 * its central directory (a streaming extractor must find the same upack.json). Otherwise an
 * upstream could hand out any package under any name. Only the identity is read, not the rest of
 * the manifest's rules: serving a package is not publishing it (keeping it is, cachePulled).
 *
 * Throws bad_gateway naming the connector: CONNECTOR_PACKAGE_MISMATCH when upack.json names another
 * package or version, CONNECTOR_NOT_A_PACKAGE when the file is no readable universal package.
 */
export async function checkPulledIdentity(blobs: BlobStore, blob: BlobInfo, remote: RemoteTarget): Promise<void> {
  let claimed: unknown;
  try {
    const reader = await openZipBlob(blobs, blob.sha256);
    try {
      await reader.verifyLocalHeaders();
      if (reader.findEntry("upack.json") === undefined) throw new Error("it has no upack.json");
      claimed = JSON.parse(await reader.readText("upack.json", MAX_MANIFEST_BYTES)) as unknown;
    } finally {
      await reader.close();
    }
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw refused(remote, "CONNECTOR_NOT_A_PACKAGE", `that is not a universal package (${detail})`, error);
  }
  const named = identityOf(claimed);
  const asked = { group: remote.group, name: remote.name };
  if (
    named !== undefined &&
    samePackage(named, asked) &&
    named.version.toLowerCase() === remote.version.toLowerCase()
  ) {
    return;
  }
  const says = named === undefined ? "no valid package" : describe(named.group, named.name, named.version);
  throw refused(remote, "CONNECTOR_PACKAGE_MISMATCH", `whose upack.json names ${says}`);
}

/** Group, name and canonical version as upack.json states them; undefined when it states none usable. */
function identityOf(json: unknown): { group: string; name: string; version: string } | undefined {
  if (!isPlainObject(json)) return undefined;
  const { group, name, version } = json;
  if (group !== undefined && group !== null && typeof group !== "string") return undefined;
  if (typeof name !== "string" || typeof version !== "string") return undefined;
  const canonical = canonicalVersion(version);
  return canonical === undefined ? undefined : { group: group ?? "", name, version: canonical };
}

function describe(group: string, name: string, version: string): string {
  return quote(`${group === "" ? "" : `${group}/`}${name} ${version}`);
}

function refused(remote: RemoteTarget, code: string, what: string, cause?: unknown): DomainError {
  return new DomainError(
    "bad_gateway",
    code,
    `Connector '${remote.connector.name}' sent a file for ${describe(remote.group, remote.name, remote.version)} ` +
      `${what}; the download was refused.`,
    { cause },
  );
}
