import { DomainError } from "../../domain/errors.js";
import { ExecutorError } from "../executor.js";
import { ItemUnknownError } from "./handler.js";

/**
 * The text an item result or log line shows for an error. Our own errors' messages name paths,
 * variables and packages (never content); anything else is reduced to its code or class, since a
 * library's message might quote what it was parsing.
 */
export function describeError(error: unknown): string {
  if (error instanceof ExecutorError || error instanceof ItemUnknownError || error instanceof DomainError) {
    return error.message;
  }
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === "string") return `failed (${code})`;
  return error instanceof Error ? `failed (${error.name})` : "failed";
}
