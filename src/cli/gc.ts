import type { Config } from "../config.js";
import type { Db } from "../storage/database.js";
import { systemClock } from "../domain/clock.js";
import type { EveryStoreCollection as CollectionResult } from "../storage/stores-collector.js";
import { serverTarget } from "./server-target.js";

/**
 * `wharf gc [--dry-run]`: deletes the blobs nothing references. With no server on the data
 * directory, it takes the directory's lock (so none can start meanwhile) and collects at once: no
 * upload can be under way, as for the start-up sweep. With a server running, only that server
 * knows its uploads in flight, so the command asks it (`POST /api/storage/gc`) with the key in
 * WHARF_API_KEY or --api-key, at WHARF_HOST/WHARF_PORT or --server.
 */

const USAGE = `Usage: wharf gc [--dry-run] [--server <url>] [--api-key <key>]

Deletes stored blobs that no package version, asset file or assembled package references.
--dry-run lists them and the bytes they would free, deleting nothing.

With no server running on WHARF_DATA_DIR, collects there directly. With one running, asks it
(POST /api/storage/gc) at --server (default: where WHARF_HOST and WHARF_PORT say) with the
full-control or administrator key in --api-key or WHARF_API_KEY; the server deletes a blob once
two collections at least an hour apart saw it unreferenced.`;

interface GcContext {
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

interface GcArgs {
  readonly dryRun: boolean;
  readonly server?: string;
  readonly apiKey?: string;
}

function parseArgs(args: readonly string[]): GcArgs | string {
  let dryRun = false;
  let server: string | undefined;
  let apiKey: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--dry-run") dryRun = true;
    else if (arg === "--server" || arg === "--api-key") {
      const value = args[++i];
      if (value === undefined || value.startsWith("--")) return `${arg} needs a value`;
      if (arg === "--server") server = value;
      else apiKey = value;
    } else return `unknown argument '${arg}'`;
  }
  return { dryRun, ...(server === undefined ? {} : { server }), ...(apiKey === undefined ? {} : { apiKey }) };
}

export async function gcCommand(args: string[], ctx: GcContext): Promise<number> {
  if (args.includes("--help") || args.includes("-h") || args[0] === "help") {
    ctx.out(USAGE);
    return 0;
  }
  const parsed = parseArgs(args);
  if (typeof parsed === "string") {
    ctx.err(`wharf gc: ${parsed}\n\n${USAGE}`);
    return 2;
  }
  const { refuseInClusterMode } = await import("../storage/postgres/cluster-mode.js");
  refuseInClusterMode(ctx.config, "wharf gc");
  const { lockDataDirIfFree } = await import("../storage/data-dir-lock.js");
  const unlock = lockDataDirIfFree(ctx.config.dataDir);
  if (unlock === undefined) return askServer(parsed, ctx);
  try {
    report(await collectHere(parsed.dryRun, ctx), ctx);
    return 0;
  } finally {
    unlock();
  }
}

/** No server runs (this process holds the lock): nothing is in flight, so no grace period is needed. */
async function collectHere(dryRun: boolean, ctx: GcContext): Promise<CollectionResult> {
  const { assertWritableDataDir } = await import("../storage/data-dir-access.js");
  const { dataPaths } = await import("../storage/data-paths.js");
  const { openDatabase } = await import("../storage/database.js");
  assertWritableDataDir(ctx.config.dataDir);
  const db = openDatabase(dataPaths(ctx.config.dataDir).database);
  try {
    const { auditLocalCommand } = await import("../areas/audit/cli-record.js");
    const audited = auditLocalCommand(db, systemClock, "gc", []);
    const result = await collectIn(db, dryRun, ctx);
    await audited(0, !dryRun && result.deleted > 0);
    return result;
  } finally {
    db.close();
  }
}

async function collectIn(db: Db, dryRun: boolean, ctx: GcContext): Promise<CollectionResult> {
  const { blobReferenceCheck } = await import("../storage/blob-keeper.js");
  const { blobStoresOf } = await import("../storage/blob-stores.js");
  const { createEveryStoreCollector } = await import("../storage/stores-collector.js");
  const stores = await blobStoresOf(db, ctx.config, systemClock);
  const collector = createEveryStoreCollector({
    stores: () => stores.all(),
    isReferenced: blobReferenceCheck(db),
    clock: systemClock,
    graceMs: 0,
  });
  return collector.collect({ dryRun });
}

async function askServer(args: GcArgs, ctx: GcContext): Promise<number> {
  const target = serverTarget(
    args,
    ctx.config,
    ctx.err,
    "wharf gc: a server is running on the data directory; give its full-control or administrator key in WHARF_API_KEY or --api-key",
  );
  if (target === undefined) return 2;
  const url = `${target.base}/api/storage/gc?dryRun=${args.dryRun}`;
  let response: Response;
  try {
    response = await fetch(url, { method: "POST", headers: { "X-ApiKey": target.apiKey } });
  } catch (error) {
    ctx.err(`wharf gc: ${url} could not be reached (${error instanceof Error ? error.message : String(error)})`);
    return 1;
  }
  const body = await response.text();
  if (response.status !== 200) {
    ctx.err(`wharf gc: the server answered ${response.status}: ${body}`);
    return 1;
  }
  report(JSON.parse(body) as CollectionResult, ctx);
  return 0;
}

function report(result: CollectionResult, ctx: GcContext): void {
  const several = result.stores.length > 1;
  for (const blob of result.blobs) ctx.out(`${blob.sha256} ${blob.size}${several ? ` ${blob.store ?? ""}` : ""}`);
  // Each store's part when there are several, and any store that could not be collected.
  for (const part of result.stores) {
    if (part.error !== undefined) {
      ctx.err(`wharf gc: store ${part.store} was not collected: ${part.error}`);
      continue;
    }
    if (several) ctx.out(`store ${part.store}: examined ${part.examined}, ${part.deleted} (${part.bytesFreed} bytes)`);
    if (part.abandonedUploads) ctx.out(`store ${part.store}: aborted ${part.abandonedUploads} abandoned uploads`);
  }
  const verb = result.dryRun ? "would delete" : "deleted";
  const grace = result.inGracePeriod > 0 ? `; ${result.inGracePeriod} unreferenced kept for their grace period` : "";
  ctx.out(
    `examined ${result.examined} blobs: ${verb} ${result.deleted} (${result.bytesFreed} bytes) in ${result.durationMs} ms${grace}`,
  );
}
