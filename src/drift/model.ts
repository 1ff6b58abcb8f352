import type { Readable } from "node:stream";

/**
 * The vocabulary of the configuration engine (issue 13 section 2), shared by the Wharf server and
 * `wharf agent`: pure data, no Fastify, SQLite or HTTP. The engine (engine.ts) collects, compares
 * and applies items through an Executor (executor.ts).
 */

export const ITEM_TYPES = ["file", "directory", "package", "config-key", "process"] as const;
export type ItemType = (typeof ITEM_TYPES)[number];

/**
 * One desired item, as validated on write (items/schema.ts parseItem) and as shipped to agents.
 * `properties` are the type's own (see items/schema.ts); `key` identifies it among items of its
 * type on one server (a path, `feed/group/name::target`, `path#key`, a process pattern).
 */
export interface DesiredItem {
  readonly type: ItemType;
  readonly key: string;
  /** The role that defines it; null when defined on the server itself (the seed's collectionRole). */
  readonly role: string | null;
  /** Content is never logged, diffed or returned: differences carry hashes only. */
  readonly sensitive: boolean;
  readonly properties: Readonly<Record<string, unknown>>;
}

export type ItemStatus = "current" | "drifted" | "unknown";

/** One property that differs. Values are short: hashes, modes as octal text, versions, booleans. */
export interface Difference {
  readonly property: string;
  readonly desired: string | number | boolean | null;
  readonly actual: string | number | boolean | null;
}

export interface ItemResult {
  readonly type: ItemType;
  readonly key: string;
  readonly role: string | null;
  readonly status: ItemStatus;
  /** Empty when current; what differs when drifted. */
  readonly differences: readonly Difference[];
  /** Why the item is unknown (an unreadable file, a variable that does not exist, ...). */
  readonly error?: string;
}

/** A universal package installed by a `package` item, for the package deployment record (area C). */
export interface InstalledPackage {
  readonly feed: string;
  readonly group: string;
  readonly name: string;
  readonly version: string;
  readonly target: string;
}

/** One change a remediation made, or would make when simulating ("would write /srv/app.conf ..."). */
export interface AppliedChange {
  readonly type: ItemType;
  readonly key: string;
  readonly description: string;
  readonly installed?: InstalledPackage;
}

export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * Where `package` items get packages: the Wharf server reads its own feeds, an agent asks the
 * server (with its agent key, only for packages its desired items name).
 */
export interface PackageSource {
  /** The exact version (`latest`: the highest) and the files under package/ with size and SHA-256; undefined when none. */
  resolve(
    feed: string,
    group: string,
    name: string,
    version: string,
    signal: AbortSignal,
  ): Promise<ResolvedPackage | undefined>;
  /** The .upack file's bytes. */
  open(feed: string, group: string, name: string, version: string, signal: AbortSignal): Promise<Readable>;
}

export interface ResolvedPackage {
  readonly version: string;
  /** Paths relative to the package/ folder, POSIX, files only. */
  readonly files: readonly { readonly path: string; readonly size: number; readonly sha256: string }[];
}

export interface RunContext {
  /** Variables for file templates, already merged (server over role over environment over global), names lowercased. */
  readonly variables: ReadonlyMap<string, string>;
  readonly packages: PackageSource;
  readonly signal: AbortSignal;
  log(level: LogLevel, message: string): void;
}
