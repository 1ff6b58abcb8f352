import { compareVersions, formatVersion, parseVersion, type UpackVersion } from "../../../domain/upack-version.js";
import type { Connector } from "../../connectors/index.js";
import { packageKey, type RemotePackage, type RemoteVersion, sortedVersions } from "./entries.js";

/**
 * How a feed's own listing entries and its connectors' are merged (remote/listings.ts): local
 * first, then connectors in the feed's order; the first source of a version wins it.
 */

export type Json = Record<string, unknown>;

/** One connector's usable entries. */
export interface Source<T> {
  readonly connector: Connector;
  readonly entries: readonly T[];
}

/** Package entries: local first, then each connector's; `versions` of every source merged. */
export function mergePackages(own: readonly Json[], sources: readonly Source<RemotePackage>[]): Json[] {
  const byKey = new Map<string, { json: Json; versions: string[] }>();
  for (const json of own) {
    const key = packageKey(stringOf(json.group), stringOf(json.name));
    byKey.set(key, { json, versions: stringsOf(json.versions) });
  }
  for (const { entries } of sources) {
    for (const entry of entries) {
      const known = byKey.get(entry.key);
      if (known) known.versions.push(...entry.versions);
      else byKey.set(entry.key, { json: entry.json, versions: [...entry.versions] });
    }
  }
  return [...byKey.values()].map(({ json, versions }) => {
    const merged = sortedVersions(versions);
    return { ...json, latestVersion: merged[0] ?? json.latestVersion, versions: merged };
  });
}

export interface VersionEntry {
  readonly group: string;
  readonly name: string;
  readonly version: UpackVersion;
  readonly json: Json;
}

/** Versions: local first, then each connector's in order; the first source of a version wins it. */
export function mergeVersions(own: readonly Json[], sources: readonly Source<RemoteVersion>[]): VersionEntry[] {
  const byKey = new Map<string, VersionEntry>();
  const add = (entry: VersionEntry) => {
    const key = `${packageKey(entry.group, entry.name)}\0${formatVersion(entry.version).toLowerCase()}`;
    if (!byKey.has(key)) byKey.set(key, entry);
  };
  for (const json of own) {
    const version = parseVersion(stringOf(json.version));
    if (version !== undefined) add({ group: stringOf(json.group), name: stringOf(json.name), version, json });
  }
  for (const { entries } of sources) {
    for (const { group, name, version, json } of entries) add({ group, name, version, json });
  }
  return [...byKey.values()];
}

/** As the local listing orders them: by group, then name (lowercased). */
export function byPackage(a: Json, b: Json): number {
  return (
    compareText(stringOf(a.group).toLowerCase(), stringOf(b.group).toLowerCase()) ||
    compareText(stringOf(a.name).toLowerCase(), stringOf(b.name).toLowerCase())
  );
}

/** By group, then name, then newest version first (docs/compat.md 1.4 ordering). */
export function byVersion(a: VersionEntry, b: VersionEntry): number {
  return (
    compareText(a.group.toLowerCase(), b.group.toLowerCase()) ||
    compareText(a.name.toLowerCase(), b.name.toLowerCase()) ||
    compareVersions(b.version, a.version)
  );
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const stringOf = (value: unknown): string => (typeof value === "string" ? value : "");
const stringsOf = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
