import { parseArgs } from "node:util";
import type { Feed, FeedInput, FeedService } from "../areas/management/index.js";
import { DomainError } from "../domain/errors.js";

/**
 * `wharf feeds ...` (seed-api.md area I: every feed management operation is also a command). It
 * runs outside HTTP, so it calls the feed service directly, as an administrator: whoever can run
 * it can already read the data directory.
 */

export interface FeedsCommandContext {
  readonly feeds: FeedService;
  readonly out: (line: string) => void;
}

export const FEEDS_USAGE = `Usage:
  wharf feeds list
  wharf feeds get <name>
  wharf feeds create <name> --type <type> [--description <text>] [--active true|false]
  wharf feeds update <name> [--name <new name>] [--type <type>] [--description <text>] [--active true|false]
  wharf feeds delete <name>

An empty --description removes it. Types: universal, nuget, npm, asset, ... (case-insensitive).`;

class UsageError extends Error {}

/** Runs one feeds subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export async function feedsCommand(args: string[], ctx: FeedsCommandContext): Promise<number> {
  try {
    return await run(args, ctx);
  } catch (error) {
    if (error instanceof UsageError) {
      ctx.out(`error: ${error.message}`);
      ctx.out(FEEDS_USAGE);
      return 2;
    }
    if (error instanceof DomainError) {
      ctx.out(`error: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

const OPTIONS = {
  type: { type: "string" },
  description: { type: "string" },
  active: { type: "string" },
  name: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };

async function run(args: string[], { feeds, out }: FeedsCommandContext): Promise<number> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const [subcommand, name, ...extra] = positionals;
  if (values.help || subcommand === "help") {
    out(FEEDS_USAGE);
    return 0;
  }
  if (subcommand === undefined) throw new UsageError("a subcommand is required");
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);

  const allowed: Record<string, readonly (keyof Values)[]> = {
    list: [],
    get: [],
    delete: [],
    create: ["type", "description", "active"],
    update: ["name", "type", "description", "active"],
  };
  const permitted = allowed[subcommand];
  if (permitted === undefined) throw new UsageError(`unknown subcommand '${subcommand}'`);
  for (const option of Object.keys(values) as (keyof Values)[]) {
    if (!permitted.includes(option)) throw new UsageError(`--${option} does not apply to 'feeds ${subcommand}'`);
  }
  if (subcommand === "list") {
    if (name !== undefined) throw new UsageError(`unexpected argument '${name}'`);
    printTable(await feeds.listFeeds(), out);
    return 0;
  }
  if (name === undefined) throw new UsageError(`'feeds ${subcommand}' needs a feed name`);

  switch (subcommand) {
    case "get":
      printFeed(feeds, await feeds.getFeed(name), out);
      return 0;
    case "delete":
      await feeds.deleteFeed(name);
      out(`Deleted feed '${name}'.`);
      return 0;
    case "create":
      if (values.type === undefined) throw new UsageError("'feeds create' needs --type");
      printFeed(feeds, await feeds.createFeed({ ...inputFrom(values), name }), out);
      return 0;
    default: {
      const input = inputFrom(values);
      if (Object.keys(input).length === 0) throw new UsageError("nothing to update: give at least one option");
      printFeed(feeds, await feeds.updateFeed(name, input), out);
      return 0;
    }
  }
}

function inputFrom(values: Values): FeedInput {
  const input: FeedInput = {};
  if (values.name !== undefined) input.name = values.name;
  if (values.type !== undefined) input.feedType = values.type;
  if (values.description !== undefined) input.description = values.description === "" ? null : values.description;
  if (values.active !== undefined) {
    const active = values.active.toLowerCase();
    if (active !== "true" && active !== "false") throw new UsageError("--active takes true or false");
    input.active = active === "true";
  }
  return input;
}

function printFeed(feeds: FeedService, feed: Feed, out: (line: string) => void): void {
  out(JSON.stringify(feeds.present(feed, { canPublish: true }), null, 2));
}

function printTable(list: readonly Feed[], out: (line: string) => void): void {
  if (list.length === 0) {
    out("No feeds.");
    return;
  }
  const rows = [
    ["NAME", "TYPE", "ACTIVE", "DESCRIPTION"],
    ...list.map((feed) => [
      feed.name,
      feed.feedType,
      String(feed.settings.active),
      oneLine(feed.settings.description ?? ""),
    ]),
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => (row[column] ?? "").length)));
  for (const row of rows) {
    out(
      row
        .map((cell, column) => (column < 3 ? cell.padEnd(widths[column] ?? 0) : cell))
        .join("  ")
        .trimEnd(),
    );
  }
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
}
