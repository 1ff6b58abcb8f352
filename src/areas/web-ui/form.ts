import type { FastifyReply, FastifyRequest } from "fastify";
import { DomainError } from "../../domain/errors.js";
import { STATUS_BY_KIND } from "../../http/errors.js";

/**
 * What the web UI's form handlers share: reading a posted form, ids from URLs, a service's refusal
 * shown on the form again, and post/redirect/get.
 */

/** A posted form's fields as strings (a repeated field arrives as an array); anything else is blank. */
export interface FormFields {
  /** The first value of `name`, or "" when absent. */
  text(name: string): string;
  /** Every value of `name` (checkboxes, multi-selects). */
  list(name: string): string[];
  /** Whether a checkbox named `name` was ticked. */
  checked(name: string): boolean;
}

export function formFields(body: unknown): FormFields {
  const fields = body !== null && typeof body === "object" ? (body as Record<string, unknown>) : {};
  const list = (name: string): string[] => {
    const value = fields[name];
    const values = Array.isArray(value) ? value : [value];
    return values.filter((v): v is string => typeof v === "string");
  };
  return {
    text: (name) => list(name)[0] ?? "",
    list,
    checked: (name) => list(name).length > 0,
  };
}

/** A comma- or line-separated list as typed in a text field, blanks dropped. */
export function splitList(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/**
 * Runs a service call for a form; a DomainError (the service refusing the input) is answered by
 * `showAgain` with the service's message and the status the APIs give it, anything else is thrown.
 * Returns undefined when the reply has been sent.
 */
export async function orRefused<T>(
  reply: FastifyReply,
  action: () => Promise<T>,
  showAgain: (message: string) => Promise<unknown>,
): Promise<{ value: T } | undefined> {
  try {
    return { value: await action() };
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    reply.code(STATUS_BY_KIND[error.kind]);
    await showAgain(error.message);
    return undefined;
  }
}

/** A positive integer id from a URL segment (as the lists show them), or undefined (the page answers 404). */
export function positiveId(text: string): number | undefined {
  if (!/^[1-9][0-9]{0,15}$/.test(text)) return undefined;
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : undefined;
}

/** A URL's `:id` parameter as a positive integer id, or undefined. */
export const idParam = (request: FastifyRequest): number | undefined =>
  positiveId((request.params as { id: string }).id);

/** A URL's `:name` parameter. */
export const nameParam = (request: FastifyRequest): string => (request.params as { name: string }).name;

/** Post/redirect/get after a successful change. */
export const backTo = (reply: FastifyReply, url: string) => reply.redirect(url, 303);
