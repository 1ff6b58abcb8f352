#!/usr/bin/env -S node --max-semi-space-size=8
// First: an unsupported Node.js stops here with a message, before a native addon could crash it.
import "../supported-node.js";
import fs from "node:fs";
import type { FeedService } from "../areas/management/index.js";
import type { Config } from "../config.js";
import { type Clock, systemClock } from "../domain/clock.js";
import { DomainError } from "../domain/errors.js";
import { assertWritableDataDir } from "../storage/data-dir-access.js";
import { dataPaths } from "../storage/data-paths.js";
import type { Db } from "../storage/database.js";
import { WHARF_VERSION } from "../version.js";

/**
 * The `wharf` command. `serve` runs the server; the data subcommands open the database in
 * WHARF_DATA_DIR and call the same services the HTTP APIs call (WAL makes that safe while a server
 * runs on the same directory). Exit codes: 0 done, 1 refused or failed, 2 bad usage or configuration.
 */

const USAGE = `Usage: wharf <command> [arguments]

Commands:
  serve                      run the server (configured by WHARF_* environment variables)
  healthcheck                ask that server's /health (exit 0 when healthy, 1 when not)
  migrate                    bring the database's schema up to date (PostgreSQL with WHARF_DATABASE_URL)
  cluster import             copy this stopped single node (SQLite + disk) into cluster mode, verified and resumable
  gc [--dry-run]             delete stored blobs nothing references (asks the running server, if any)
  audit [--from --to --actor --action --object --limit --json|--jsonl]   read the audit log (asks the running server)
  storage move|status <feed> move a feed to another package store and follow it (asks the running server)
  feeds <subcommand>         list, get, create, update and delete feeds
  retention preview|run <feed>   what the feed's retention rules delete, and a run (asks the running server)
  webhooks <subcommand>      list, create, delete and test webhooks; their delivery log (asks the running server)
  promote <from> <pkg> <version> <to>   promote a package version to another feed (asks the running server)
  promotions list            list promotions (asks the running server)
  repackage <feed> <pkg> <version> <newVersion>   publish a version under a new version number (asks the server)
  api-keys <subcommand>      manage API keys
  users <subcommand>         manage users and groups
  permissions <subcommand>   manage privileges and restrictions
  applications <subcommand>  list and create applications
  environments <subcommand>  list, create and delete environments
  pipelines <subcommand>     list, show, create (from a JSON file) and delete pipelines
  servers <subcommand>       list, get, create, update and delete servers; agent keys
  roles <subcommand>         list, get, create, update and delete roles
  credentials <subcommand>   list, create, update and delete stored SSH credentials (never shown)
  config <subcommand>        configuration status, checks, remediation jobs and a server's items
  pack <folder> --name --version   make a universal package (.upack) from a folder
  push <file> <feed-url>     upload a .upack to a feed (Wharf or ProGet); key in WHARF_API_KEY
  agent --server <url> --root <dir>   run the configuration agent of an 'agent' server; key in WHARF_AGENT_KEY
  help                       show this help
  --version                  show the version

Run 'wharf <command> --help' for a command's own usage.

Environment:
  WHARF_DATA_DIR             data directory (default ./data); every command works on it
  WHARF_DATABASE_URL         cluster mode's PostgreSQL (postgres://...): 'serve', 'migrate' and 'cluster import'
  WHARF_PORT, WHARF_HOST     where 'serve' listens (default 0.0.0.0:8624)
  WHARF_ADMIN_API_KEY        full-control API key ensured at start-up (else one is generated once)
  WHARF_BASE_URL             public base URL when behind a proxy
  WHARF_MAX_UPLOAD_BYTES     largest accepted upload
  WHARF_LOG_LEVEL            fatal, error, warn, info (default), debug, trace or silent
  WHARF_API_KEY              the key 'push' sends (instead of --api-key)
  WHARF_AGENT_KEY            the agent key 'agent' sends (instead of --key)`;

/**
 * What every data subcommand receives (each module declares the same shape itself): the services,
 * and where to print: results on `out`, errors (and the usage after a usage error) on `err`.
 */
interface DataCommandContext {
  readonly db: Db;
  readonly clock: Clock;
  readonly feeds: FeedService;
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

type DataCommand = (args: string[], ctx: DataCommandContext) => Promise<number>;

/**
 * The configuration module is loaded by the commands that read it: its zod schemas cost some
 * 19 MB of resident memory, which `wharf agent` (configured by its arguments) must not carry.
 */
async function loadConfig(env: NodeJS.ProcessEnv): Promise<Config> {
  return (await import("../config.js")).loadConfig(env);
}

/** Loaded on demand, so that `wharf --help` does not load the server. */
const DATA_COMMANDS: Record<string, () => Promise<DataCommand>> = {
  feeds: async () => (await import("./feeds.js")).feedsCommand,
  "api-keys": async () => (await import("./api-keys.js")).apiKeysCommand,
  users: async () => (await import("./users.js")).usersCommand,
  permissions: async () => (await import("./permissions.js")).permissionsCommand,
  applications: async () => (await import("./applications.js")).applicationsCommand,
  environments: async () => (await import("./environments.js")).environmentsCommand,
  pipelines: async () => (await import("./pipelines.js")).pipelinesCommand,
  servers: async () => (await import("./servers.js")).serversCommand,
  roles: async () => (await import("./roles.js")).rolesCommand,
  credentials: async () => (await import("./credentials.js")).credentialsCommand,
  config: async () => (await import("./config.js")).configCommand,
};

interface CliIo {
  readonly env: NodeJS.ProcessEnv;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

type ClientCommand = (args: string[], io: CliIo & { readonly progressOutput: NodeJS.WriteStream }) => Promise<number>;

/** Commands that work on files and talk to a server over HTTP: no configuration, no database. */
const CLIENT_COMMANDS: Record<string, () => Promise<ClientCommand>> = {
  pack: async () => (await import("./pack.js")).packCommand,
  push: async () => (await import("./push.js")).pushCommand,
  agent: async () => (await import("./agent.js")).agentCommand,
};

/** Runs one `wharf` invocation and returns its exit code; `serve` returns only if start-up fails. */
async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined) {
    io.err(USAGE);
    return 2;
  }
  try {
    if (command === "help" || command === "--help" || command === "-h") {
      io.out(USAGE);
      return 0;
    }
    if (command === "--version" || command === "-v" || command === "version") {
      io.out(WHARF_VERSION);
      return 0;
    }
    if (command === "serve") {
      if (args.length === 1 && (args[0] === "--help" || args[0] === "-h")) {
        io.out(USAGE);
        return 0;
      }
      if (args.length > 0) {
        io.err(`wharf serve takes no arguments (configure it with WHARF_* variables)\n\n${USAGE}`);
        return 2;
      }
      const config = await loadConfig(io.env);
      const { serve } = await import("../main.js");
      await serve(config);
      return 0;
    }
    const loadClient = CLIENT_COMMANDS[command];
    if (loadClient !== undefined) return await (await loadClient())(args, { ...io, progressOutput: process.stderr });
    if (command === "migrate") {
      const { migrateCommand } = await import("./migrate.js");
      return await migrateCommand(args, { config: await loadConfig(io.env), out: io.out, err: io.err });
    }
    if (command === "cluster") {
      const { clusterCommand } = await import("./cluster-import.js");
      return await clusterCommand(args, { config: await loadConfig(io.env), out: io.out, err: io.err });
    }
    if (command === "gc") {
      const { gcCommand } = await import("./gc.js");
      return await gcCommand(args, { config: await loadConfig(io.env), out: io.out, err: io.err });
    }
    if (command === "webhooks") {
      const { webhooksCommand } = await import("./webhooks.js");
      return await webhooksCommand(args, { config: await loadConfig(io.env), out: io.out, err: io.err });
    }
    if (command === "retention") {
      const { retentionCommand } = await import("./retention.js");
      return await retentionCommand(args, { config: await loadConfig(io.env), out: io.out, err: io.err });
    }
    if (command === "audit") {
      const { auditCommand } = await import("./audit.js");
      return await auditCommand(args, { config: await loadConfig(io.env), out: io.out, err: io.err });
    }
    if (command === "storage") {
      const { storageCommand } = await import("./storage.js");
      return await storageCommand(args, { config: await loadConfig(io.env), out: io.out, err: io.err });
    }
    if (command === "promote" || command === "promotions" || command === "repackage") {
      const commands = await import("./promotions.js");
      const run = {
        promote: commands.promoteCommand,
        promotions: commands.promotionsCommand,
        repackage: commands.repackageCommand,
      }[command];
      return await run(args, { config: await loadConfig(io.env), out: io.out, err: io.err });
    }
    if (command === "healthcheck") {
      const { healthcheckCommand } = await import("./healthcheck.js");
      return await healthcheckCommand(args, await loadConfig(io.env), io);
    }
    const load = DATA_COMMANDS[command];
    if (load === undefined) {
      io.err(`wharf: unknown command '${command}'\n\n${USAGE}`);
      return 2;
    }
    return await runDataCommand(command, await load(), args, io);
  } catch (error) {
    // By name: config.ts (the class) is not loaded by every command.
    if (error instanceof Error && error.name === "ConfigError") {
      io.err(error.message);
      return 2;
    }
    if (error instanceof DomainError) {
      io.err(error.message);
      return 1;
    }
    io.err(`wharf: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

async function runDataCommand(name: string, command: DataCommand, args: string[], io: CliIo): Promise<number> {
  const config = await loadConfig(io.env);
  // Asking for usage must not create a database (in ./data, if WHARF_DATA_DIR is not set):
  // the subcommand gets a throw-away in-memory one instead.
  const usageOnly = args.length === 0 || args[0] === "help" || args.includes("--help") || args.includes("-h");
  const file = usageOnly ? ":memory:" : dataPaths(config.dataDir).database;
  const isNew = !usageOnly && !fs.existsSync(file);
  if (!usageOnly) {
    const { refuseInClusterMode } = await import("../storage/postgres/cluster-mode.js");
    refuseInClusterMode(config, `wharf ${name}`);
    // Before SQLite: its "unable to open database file" names neither the directory nor the user.
    assertWritableDataDir(config.dataDir);
  }
  // Loaded here, after the configuration is known to be valid: they pull in SQLite and the areas.
  const { openDatabase } = await import("../storage/database.js");
  const { createFeedService } = await import("../areas/management/index.js");
  const { findConnectorReference } = await import("../areas/connectors/index.js");
  const { auditLocalCommand } = await import("../areas/audit/cli-record.js");
  const db = openDatabase(file);
  try {
    // A typo in WHARF_DATA_DIR would otherwise go unnoticed: say where the new database is.
    if (isNew) io.err(`note: created a new, empty Wharf database in ${config.dataDir}`);
    const feeds = createFeedService({ db, clock: systemClock, config, findConnector: findConnectorReference(db) });
    // A change made here, not over HTTP, leaves its audit record too (areas/audit/cli-record.ts).
    const audited = auditLocalCommand(db, systemClock, name, args);
    const code = await command(args, { db, clock: systemClock, feeds, config, out: io.out, err: io.err });
    await audited(code);
    return code;
  } finally {
    db.close();
  }
}

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
// Not process.exit(): output to a pipe may still be in flight. `serve` keeps running after this
// (the listening server holds the process; its signal handlers exit).
process.exitCode = code;
