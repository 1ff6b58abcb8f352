import { readFile } from "node:fs/promises";
import type { Config } from "../config.js";
import { parsePackageStoreXml, type StorageConfig } from "../domain/package-store.js";
import { serverTarget } from "./server-target.js";
import { type MoveApi, serverMoveApi } from "./storage-http.js";
import { localMoveApi } from "./storage-local.js";
import { progressLine, type Rate, statusLine, summaryLine } from "./storage-progress.js";

/**
 * `wharf storage move <feed> --to <file|default>` and `wharf storage status <feed>` (issue 15
 * section 4). With a server running on the data directory, the move runs there (it keeps serving the
 * feed meanwhile and alone knows its uploads in flight): the command asks it over HTTP, as `wharf gc`
 * does, with WHARF_API_KEY or --api-key, at WHARF_HOST/WHARF_PORT or --server. With none, it takes
 * the directory's lock and moves the feed itself. Either way it follows the move until it is done
 * or failed.
 */

const USAGE = `Usage:
  wharf storage move <feed> --to <file|default> [--new-uploads-only] [--server <url>] [--api-key <key>]
  wharf storage move <feed> --retry [--server <url>] [--api-key <key>]
  wharf storage status <feed> [--server <url>] [--api-key <key>]

move      sets the feed's package store (the file holds a packageStore XML element or a
          FeedStorageConfiguration JSON {id, properties}; 'default' = the server default), then
          follows the server moving the feed's blobs there: progress (blobs, bytes, rate, ETA)
          and a summary. New uploads go to the new store at once; the feed keeps serving.
          --new-uploads-only changes the store without moving what is stored; --retry resumes
          a failed move (or moves every blob into the feed's current store).
status    prints the state of the feed's latest move.

With a server running on WHARF_DATA_DIR (or with --server), asks it at --server (default: where
WHARF_HOST and WHARF_PORT say) with a key that may manage the feed in --api-key or WHARF_API_KEY.
With none, works on the data directory itself (holding its lock until the move ends).`;

export interface StorageContext {
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  /** How often a move is polled (tests shorten it). */
  readonly pollMs?: number;
}

interface StorageArgs {
  readonly action: "move" | "status";
  readonly feed: string;
  readonly to?: string;
  readonly newUploadsOnly: boolean;
  readonly retry: boolean;
  readonly server?: string;
  readonly apiKey?: string;
}

const VALUED = new Set(["--to", "--server", "--api-key"]);

function parseArgs(args: readonly string[]): StorageArgs | string {
  const [action, feed, ...rest] = args;
  if (action !== "move" && action !== "status")
    return action === undefined ? "a subcommand is needed" : `unknown subcommand '${action}'`;
  if (feed === undefined || feed.startsWith("--")) return `${action} needs a feed name`;
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    if (VALUED.has(arg)) {
      const value = rest[++i];
      if (value === undefined || value.startsWith("--")) return `${arg} needs a value`;
      values.set(arg, value);
    } else if (action === "move" && (arg === "--new-uploads-only" || arg === "--retry")) flags.add(arg);
    else return `unknown argument '${arg}'`;
  }
  const to = values.get("--to");
  const retry = flags.has("--retry");
  if (action === "move" && (to === undefined) === !retry) return "move needs either --to <file|default> or --retry";
  if (retry && flags.has("--new-uploads-only")) return "--retry moves: it does not take --new-uploads-only";
  const server = values.get("--server");
  const apiKey = values.get("--api-key");
  return {
    action,
    feed,
    ...(to === undefined ? {} : { to }),
    newUploadsOnly: flags.has("--new-uploads-only"),
    retry,
    ...(server === undefined ? {} : { server }),
    ...(apiKey === undefined ? {} : { apiKey }),
  };
}

/** The storage setting `--to` names: 'default', or a file with XML or JSON. */
async function storageOf(to: string): Promise<StorageConfig | { id: "disk"; properties: Record<string, never> }> {
  // Disk with no StoragePath is what a feed with no setting of its own has: the server default.
  if (to === "default") return { id: "disk", properties: {} };
  const text = (await readFile(to, "utf8")).trim();
  return text.startsWith("<") ? parsePackageStoreXml(text) : (JSON.parse(text) as StorageConfig);
}

export async function storageCommand(args: string[], ctx: StorageContext): Promise<number> {
  if (args.length === 0 || args.includes("--help") || args.includes("-h") || args[0] === "help") {
    ctx.out(USAGE);
    return args.length === 0 ? 2 : 0;
  }
  const parsed = parseArgs(args);
  if (typeof parsed === "string") {
    ctx.err(`wharf storage: ${parsed}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.server === undefined) {
    const { refuseInClusterMode } = await import("../storage/postgres/cluster-mode.js");
    refuseInClusterMode(ctx.config, "wharf storage");
  }
  const { lockDataDirIfFree } = await import("../storage/data-dir-lock.js");
  // With --server the user named the server to ask; otherwise a free data directory is worked on here.
  const unlock = parsed.server === undefined ? lockDataDirIfFree(ctx.config.dataDir) : undefined;
  try {
    let api: MoveApi;
    if (unlock !== undefined) api = await localMoveApi(ctx.config, parsed.feed);
    else {
      const target = serverTarget(
        parsed,
        ctx.config,
        ctx.err,
        "wharf storage: a server runs on the data directory; give a key that may manage the feed in WHARF_API_KEY or --api-key",
      );
      if (target === undefined) return 2;
      api = serverMoveApi(target.base, target.apiKey, parsed.feed);
    }
    try {
      return await run(parsed, api, ctx);
    } finally {
      await api.close();
    }
  } catch (error) {
    ctx.err(`wharf storage: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    unlock?.();
  }
}

async function run(parsed: StorageArgs, api: MoveApi, ctx: StorageContext): Promise<number> {
  if (parsed.action === "status") {
    const move = await api.state();
    ctx.out(move === undefined ? `${parsed.feed} has never moved stores` : statusLine(move));
    return 0;
  }
  if (parsed.retry) await api.retry();
  else {
    const started = await api.setStorage(await storageOf(parsed.to as string), !parsed.newUploadsOnly);
    if (!started) {
      ctx.out(
        parsed.newUploadsOnly
          ? `${parsed.feed}: new uploads go to the new store; stored blobs stay where they are`
          : `${parsed.feed}: the store is set; there was nothing to move`,
      );
      return 0;
    }
  }
  return follow(api, ctx);
}

/** Polls the move, printing a progress line when it advanced, then the summary. */
async function follow(api: MoveApi, ctx: StorageContext): Promise<number> {
  const pollMs = ctx.pollMs ?? 1_000;
  let first: { at: number; bytes: number } | undefined;
  let printed = "";
  for (;;) {
    const move = await api.state();
    if (move === undefined) throw new Error("the server reports no move");
    if (move.state === "done" || move.state === "failed") {
      if (move.state === "failed") {
        ctx.err(summaryLine(move));
        return 1;
      }
      ctx.out(summaryLine(move));
      return 0;
    }
    const now = Date.now();
    first ??= { at: now, bytes: move.bytesDone };
    const seconds = (now - first.at) / 1000;
    const rate: Rate | undefined =
      seconds > 0 ? { bytesPerSecond: (move.bytesDone - first.bytes) / seconds } : undefined;
    const line = progressLine(move, rate);
    if (line !== printed) ctx.out(line);
    printed = line;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
