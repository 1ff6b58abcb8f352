import { notFound } from "../../domain/errors.js";
import { quote } from "../../domain/upack-manifest.js";
import { formatPackageId } from "../../domain/upack-range.js";

/*
 * The not-found errors every sub-area answers with (listings, downloads, connectors' versions):
 * one wording, because clients match on it.
 */

/** The phrase ProGetAutomation looks for when a package is missing (docs/clients.md 3.9). */
export function packageNotFound(group: string, name: string) {
  return notFound("PACKAGE_NOT_FOUND", `The specified package was not found: ${quote(formatPackageId(group, name))}.`);
}

export function versionNotFound(group: string, name: string, version: string) {
  return notFound(
    "VERSION_NOT_FOUND",
    `The specified package version was not found: ${quote(`${formatPackageId(group, name)} ${version}`)}.`,
  );
}
