import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { DomainError } from "../../src/domain/errors.js";

/** A JSON answer with this status: its parsed body. */
export function expectJson(res: LightMyRequestResponse, status = 200): unknown {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
  return res.json();
}

/**
 * A plain-text answer (every error is one, docs/compat.md 0.3) with this status, or one of these, whose
 * body contains each text and matches each pattern given: its body.
 */
export function expectText(
  res: LightMyRequestResponse,
  status: number | readonly number[],
  ...contains: readonly (string | RegExp)[]
): string {
  const allowed = typeof status === "number" ? [status] : status;
  expect(allowed, `${res.statusCode} ${res.body.slice(0, 300)}`).toContain(res.statusCode);
  expect(res.headers["content-type"]).toBe("text/plain");
  for (const expected of contains) {
    if (typeof expected === "string") expect(res.body).toContain(expected);
    else expect(res.body).toMatch(expected);
  }
  return res.body;
}

/** The DomainError a promise rejects with; fails the test when it resolves or rejects with anything else. */
export async function domainErrorOf(promise: Promise<unknown>): Promise<DomainError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}
