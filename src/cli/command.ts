import { parseArgs } from "node:util";
import { DomainError } from "../domain/errors.js";

/**
 * What every `wharf <command> <subcommand>` module shares: parsing the command line, `--help`
 * and `help`, and turning errors into exit codes (0 ok, 1 refused by Wharf, 2 bad arguments).
 * Each module keeps only its usage text, its options and its subcommands.
 */

export type Print = (line: string) => void;

/** Where a command prints: results and `--help` on `out`, error messages (and the usage after a usage error) on `err`. */
export interface CommandIo {
  readonly out: Print;
  /** Defaults to `out`. */
  readonly err?: Print;
}

/** Bad arguments: the command prints the message and its usage, and exits 2. */
export class UsageError extends Error {}

/** A command's options, as `parseArgs` takes them (single values only). `--help`/`-h` is added by parseCommandLine. */
export type CommandOptions = Readonly<Record<string, { readonly type: "string" | "boolean"; readonly short?: string }>>;

/** The values of the options given on the command line (absent ones are missing). */
export type OptionValues<T extends CommandOptions> = {
  [K in keyof T]?: T[K]["type"] extends "boolean" ? boolean : string;
};

export interface CommandLine<T extends CommandOptions> {
  /** The options given, without --help. */
  readonly values: OptionValues<T>;
  readonly positionals: string[];
  /** --help, -h or a first argument `help`. */
  readonly help: boolean;
}

const HELP_OPTION = { type: "boolean", short: "h" } as const;

/** Parses `args` strictly (positionals allowed); an unknown option or a missing value is a UsageError. */
export function parseCommandLine<T extends CommandOptions>(options: T, args: string[]): CommandLine<T> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: { ...options, help: HELP_OPTION }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { help, ...values } = parsed.values;
  return {
    // strict parsing gives each option the type `options` declares for it, and no other option.
    values: values as OptionValues<T>,
    positionals: parsed.positionals,
    help: help === true || parsed.positionals[0] === "help",
  };
}

export interface CommandSpec<T extends CommandOptions> {
  readonly usage: string;
  readonly options: T;
}

/**
 * Runs one subcommand: parses `args` against `spec.options`, prints the usage on `out` for help,
 * else calls `body`. A UsageError prints `error: ...` and the usage on `err` and exits 2; a
 * DomainError (Wharf refused) prints `error: ...` on `err` and exits 1; anything else is thrown.
 */
export async function runCommand<T extends CommandOptions, C extends CommandIo>(
  spec: CommandSpec<T>,
  args: string[],
  ctx: C,
  body: (line: CommandLine<T>, ctx: C) => Promise<number>,
): Promise<number> {
  const err = ctx.err ?? ctx.out;
  try {
    const line = parseCommandLine(spec.options, args);
    if (line.help) {
      ctx.out(spec.usage);
      return 0;
    }
    return await body(line, ctx);
  } catch (error) {
    if (error instanceof UsageError) {
      err(`error: ${error.message}`);
      err(spec.usage);
      return 2;
    }
    if (error instanceof DomainError) {
      err(`error: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

/** Prints rows as columns two spaces apart; the first row is the header. */
export function printTable(rows: readonly (readonly string[])[], out: Print): void {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  for (const row of rows) {
    out(
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    );
  }
}

/** All of standard input as UTF-8 text (a password or a file given as `-`). */
export async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString("utf8");
}
