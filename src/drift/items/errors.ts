import { DomainError } from "../../domain/errors.js";
import { ExecutorError } from "../executor.js";
import { ItemUnknownError } from "./handler.js";

const MAX_MESSAGE_LENGTH = 300;

/**
 * The text an item result or log line shows for an error. Our own errors' messages name paths,
 * variables and packages (never content). A SyntaxError may quote the text it was parsing (a
 * sensitive file), so only its kind is shown; other errors (a transport's, the network's) keep
 * their message, shortened.
 */
export function describeError(error: unknown): string {
  if (error instanceof ExecutorError || error instanceof ItemUnknownError || error instanceof DomainError) {
    return error.message;
  }
  if (error instanceof SyntaxError) return "failed (a syntax error)";
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (error instanceof Error) {
    const text = `${error.message}${typeof code === "string" && !error.message.includes(code) ? ` (${code})` : ""}`;
    return text.length > MAX_MESSAGE_LENGTH ? `${text.slice(0, MAX_MESSAGE_LENGTH)}...` : text;
  }
  return "failed";
}
