import fs from "node:fs";

/** What is assumed where the limit cannot be read (not Linux): the usual soft limit of a shell. */
const ASSUMED_FD_LIMIT = 1024;
/** Descriptors kept for the database, logs, listening sockets and outgoing fetches. */
const RESERVED_FDS = 128;
const MAX_DEFAULT_CONNECTIONS = 10_000;

/**
 * The process's soft limit on open files, from /proc/self/limits (Node raises the soft limit to
 * the hard one at start-up, so this is what the process really has); undefined where unreadable.
 */
export function openFileLimit(limits = "/proc/self/limits"): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)\s/m.exec(fs.readFileSync(limits, "utf8"));
    if (!line?.[1]) return undefined;
    return line[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(line[1]);
  } catch {
    return undefined;
  }
}

/**
 * How many connections may be open at once when the operator did not say: half of what the
 * descriptor limit leaves after a reserve, since a connection may hold a second descriptor (the
 * blob it downloads, the temp file it uploads to), and at most 10,000. An unknown limit
 * (`openFileLimit()` undefined) is taken as 1024.
 */
export function defaultMaxConnections(fdLimit: number | undefined): number {
  const usable = Math.floor(((fdLimit ?? ASSUMED_FD_LIMIT) - RESERVED_FDS) / 2);
  return Math.max(16, Math.min(MAX_DEFAULT_CONNECTIONS, usable));
}
