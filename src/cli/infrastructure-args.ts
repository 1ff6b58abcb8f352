import fs from "node:fs/promises";
import type { Config } from "../config.js";
import { type ConfigurationServices, createConfigurationServices } from "../areas/configuration/index.js";
import type { Clock } from "../domain/clock.js";
import { invalid } from "../domain/errors.js";
import type { Db } from "../storage/database.js";
import { loadSecretKeys } from "../storage/secret-keys.js";
import { type CommandIo, readStandardInput, UsageError } from "./command.js";

/** What `wharf servers` and `wharf roles` share: their context, repeated options and items files. */
export interface InfrastructureCommandContext extends CommandIo {
  readonly db: Db;
  readonly clock: Clock;
  /** WHARF_DEPLOY_ROOT (local roots), the SSH timeout, and the data directory's secret key (sensitive items). */
  readonly config: Config;
  /** Standard input for `--items-file -`; reads the process's when absent (tests pass their own). */
  readonly readStdin?: () => Promise<string>;
}

/** The same services as `/api/infrastructure/...`, on the command's database. */
export function infrastructureServices(ctx: InfrastructureCommandContext): ConfigurationServices {
  return createConfigurationServices({
    db: ctx.db,
    clock: ctx.clock,
    config: ctx.config,
    secrets: loadSecretKeys(ctx.config).box,
  });
}

/**
 * Takes the options that may be given more than once (`--role a --role b`, `--role=a`) out of
 * `args`: node's parseArgs, as command.ts uses it, keeps single values only.
 */
export function takeRepeated(
  args: string[],
  names: readonly string[],
): { rest: string[]; values: Map<string, string[]> } {
  const values = new Map<string, string[]>(names.map((name) => [name, []]));
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const name = names.find((n) => arg === `--${n}` || arg.startsWith(`--${n}=`));
    if (name === undefined) {
      rest.push(arg);
      continue;
    }
    if (arg.includes("=")) {
      values.get(name)?.push(arg.slice(arg.indexOf("=") + 1));
    } else {
      const value = args[++i];
      if (value === undefined) throw new UsageError(`option '--${name} <value>' needs a value`);
      values.get(name)?.push(value);
    }
  }
  return { rest, values };
}

/** The items of `--items-file` (`-`: standard input): a JSON array, or an object with `items`. */
export async function readItemsFile(file: string, ctx: InfrastructureCommandContext): Promise<unknown> {
  const text = file === "-" ? await (ctx.readStdin ?? readStandardInput)() : await fs.readFile(file, "utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw invalid("INVALID_ITEMS_FILE", `${file} is not valid JSON (${(error as Error).message}).`);
  }
  if (parsed && typeof parsed === "object" && !Array.isArray(parsed) && "items" in parsed) {
    return (parsed as { items: unknown }).items;
  }
  return parsed;
}
