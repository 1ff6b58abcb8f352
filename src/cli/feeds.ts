import type { Feed, FeedInput, FeedService } from "../areas/management/index.js";
import { SERVED_FEED_TYPES } from "../domain/feeds.js";
import { type CommandIo, type CommandLine, type OptionValues, printTable, runCommand, UsageError } from "./command.js";

/**
 * `wharf feeds ...` (docs/seed-api.md area I: every feed management operation is also a command). It
 * runs outside HTTP, so it calls the feed service directly, as an administrator: whoever can run
 * it can already read the data directory.
 */

export interface FeedsCommandContext extends CommandIo {
  readonly feeds: FeedService;
}

export const FEEDS_USAGE = `Usage:
  wharf feeds list
  wharf feeds get <name>
  wharf feeds create <name> --type <type> [--description <text>] [--active true|false]
  wharf feeds update <name> [--name <new name>] [--type <type>] [--description <text>] [--active true|false]
  wharf feeds delete <name>

An empty --description removes it. Types: ${SERVED_FEED_TYPES.join(", ")} (case-insensitive); these are
the types Wharf serves: universal packages (romp is the same format) and asset directories.`;

const OPTIONS = {
  type: { type: "string" },
  description: { type: "string" },
  active: { type: "string" },
  name: { type: "string" },
} as const;

type Values = OptionValues<typeof OPTIONS>;

/** Runs one feeds subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function feedsCommand(args: string[], ctx: FeedsCommandContext): Promise<number> {
  return runCommand({ usage: FEEDS_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run(
  { values, positionals }: CommandLine<typeof OPTIONS>,
  { feeds, out }: FeedsCommandContext,
): Promise<number> {
  const [subcommand, name, ...extra] = positionals;
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
    printFeeds(await feeds.listFeeds(), out);
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

function printFeeds(list: readonly Feed[], out: (line: string) => void): void {
  if (list.length === 0) {
    out("No feeds.");
    return;
  }
  printTable(
    [
      ["NAME", "TYPE", "ACTIVE", "DESCRIPTION"],
      ...list.map((feed) => [
        feed.name,
        feed.feedType,
        String(feed.settings.active),
        oneLine(feed.settings.description ?? ""),
      ]),
    ],
    out,
  );
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 60 ? `${flat.slice(0, 57)}...` : flat;
}
