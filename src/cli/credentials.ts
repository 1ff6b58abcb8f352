import fs from "node:fs/promises";
import { createCredentialsRepository } from "../areas/configuration/credentials-repository.js";
import {
  type CredentialInput,
  createCredentialsService,
  type CredentialsService,
} from "../areas/configuration/credentials-service.js";
import type { Config } from "../config.js";
import type { Clock } from "../domain/clock.js";
import type { Db } from "../storage/database.js";
import { loadSecretKeys } from "../storage/secret-keys.js";
import { type CommandIo, type CommandLine, printTable, readStandardInput, runCommand, UsageError } from "./command.js";

/**
 * `wharf credentials ...`: the service of `/api/infrastructure/credentials/...`, run as an
 * administrator: what `ssh` servers log in with. The secret comes from a file or standard input,
 * never from an argument (other local users can read a process's arguments), is sealed with the
 * data directory's secret key and is never printed.
 */

export interface CredentialsCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
  /** The data directory's secret key seals the secrets. */
  readonly config: Config;
  /** Standard input for --password-stdin; reads the process's when absent (tests pass their own). */
  readonly readStdin?: () => Promise<string>;
}

export const CREDENTIALS_USAGE = `Usage:
  wharf credentials list
  wharf credentials create <name> --user <user> (--private-key-file <file> | --password-stdin)
  wharf credentials update <name> [--name <new name>] [--user <user>] [--private-key-file <file> | --password-stdin]
  wharf credentials delete <name>

The private key (OpenSSH or PEM, without a passphrase) or the password is stored encrypted with
the data directory's secret key and is never shown again; an ssh server names the credential
(wharf servers create <name> --type ssh --credentials <credential>). A credential a server uses
cannot be deleted. Names: up to 50 letters, digits, '-' and '_', starting with a letter.`;

const OPTIONS = {
  user: { type: "string" },
  name: { type: "string" },
  "private-key-file": { type: "string" },
  "password-stdin": { type: "boolean" },
} as const;
type Values = CommandLine<typeof OPTIONS>["values"];

/** Runs one credentials subcommand; returns the exit code (0 ok, 1 refused by Wharf, 2 bad arguments). */
export function credentialsCommand(args: string[], ctx: CredentialsCommandContext): Promise<number> {
  return runCommand({ usage: CREDENTIALS_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run({ positionals, values }: CommandLine<typeof OPTIONS>, ctx: CredentialsCommandContext) {
  const [subcommand, name, ...extra] = positionals;
  if (subcommand === undefined) throw new UsageError("a subcommand is required");
  if (!["list", "create", "update", "delete"].includes(subcommand)) {
    throw new UsageError(`unknown subcommand '${subcommand}'`);
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const credentials: CredentialsService = createCredentialsService({
    repository: createCredentialsRepository(ctx.db),
    secrets: loadSecretKeys(ctx.config).box,
    clock: ctx.clock,
  });
  if (subcommand === "list") {
    if (name !== undefined) throw new UsageError("'credentials list' takes no arguments");
    const all = await credentials.list();
    if (all.length === 0) {
      ctx.out("No credentials.");
      return 0;
    }
    printTable(
      [["NAME", "KIND", "USER", "CREATED"], ...all.map((c) => [c.name, c.kind, c.userName, c.createdAt])],
      ctx.out,
    );
    return 0;
  }
  if (name === undefined) throw new UsageError(`'credentials ${subcommand}' needs a credential name`);
  if (subcommand === "delete") {
    if (Object.keys(values).length > 0) throw new UsageError("'credentials delete' takes no options");
    await credentials.delete(name);
    ctx.out(`Deleted credential '${name}'.`);
    return 0;
  }
  if (subcommand === "create" && values.user === undefined) throw new UsageError("--user is required");
  if (subcommand === "create" && values["private-key-file"] === undefined && values["password-stdin"] !== true) {
    throw new UsageError("give --private-key-file <file> or --password-stdin");
  }
  if (subcommand === "create" && values.name !== undefined) throw new UsageError("--name is for update");
  const input = await inputOf(values, ctx);
  const saved = subcommand === "create" ? await credentials.create(name, input) : await credentials.update(name, input);
  // The answer of the API: never the secret.
  ctx.out(JSON.stringify(saved, null, 2));
  return 0;
}

async function inputOf(values: Values, ctx: CredentialsCommandContext): Promise<CredentialInput> {
  const keyFile = values["private-key-file"];
  if (keyFile !== undefined && values["password-stdin"] === true) {
    throw new UsageError("give --private-key-file or --password-stdin, not both");
  }
  let privateKey: string | undefined;
  if (keyFile !== undefined) {
    try {
      privateKey = await fs.readFile(keyFile, "utf8");
    } catch (error) {
      throw new UsageError(`cannot read ${keyFile}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  }
  let password: string | undefined;
  if (values["password-stdin"] === true) {
    password = (await (ctx.readStdin ?? readStandardInput)()).replace(/\r?\n$/, "");
    if (password === "") throw new UsageError("--password-stdin read an empty password");
  }
  return {
    ...(values.name !== undefined && { name: values.name }),
    ...(values.user !== undefined && { userName: values.user }),
    ...(privateKey !== undefined && { privateKey }),
    ...(password !== undefined && { password }),
  };
}
