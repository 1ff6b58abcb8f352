import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import type { Authenticator } from "../../src/http/auth.js";
import { createHotResponses } from "../../src/http/hot-responses.js";
import type { ChangeWatch } from "../../src/storage/change-watch.js";

/**
 * Replays check no Accept-Encoding and send the body a route kept, unencoded: a response that was
 * encoded, or that says it varies by encoding, must never be kept (http/compression.ts), or one
 * client's variant would be sent to another. The route and the server are stand-ins here: no route
 * keeps such a response today, so only this can show what keep() would do with one.
 */

const URL_PATH = "/kept";
const watch: ChangeWatch = {
  version: () => "v1",
  refresh: () => undefined,
  refreshUnlessWithin: () => undefined,
  quietly: (write) => write(),
};
const allowAll = { allowsFromMemory: () => true } as unknown as Authenticator;
const log = { level: "silent", info: () => undefined } as unknown as FastifyBaseLogger;

function routeAnswer(headers: Record<string, string>) {
  const request = {
    raw: { method: "GET", url: URL_PATH, headers: {} },
    routeOptions: { url: URL_PATH, config: { access: { need: { kind: "authenticated" } } } },
  } as unknown as FastifyRequest;
  const reply = {
    statusCode: 200,
    getHeaders: () => ({ "x-request-id": "first", "content-type": "application/json", ...headers }),
  } as unknown as FastifyReply;
  return { request, reply };
}

/** Whether a later GET of the same URL, asking for `accept`, is replayed; and what it was sent. */
function replayed(kept: Record<string, string>, accept?: string): { answered: boolean; headers: unknown[] } {
  const hot = createHotResponses({ watch, authenticator: allowAll, metrics: { record: () => undefined }, log });
  const { request, reply } = routeAnswer(kept);
  hot.keep(request, reply, { version: "v1", body: Buffer.from('{"a":1}') });
  const sent: unknown[] = [];
  const incoming = {
    method: "GET",
    url: URL_PATH,
    headers: accept === undefined ? {} : { "accept-encoding": accept },
    socket: {},
  } as unknown as IncomingMessage;
  const response = {
    writeHead: (_status: number, headers: unknown[]) => sent.push(...headers),
    end: () => undefined,
  } as unknown as ServerResponse;
  return { answered: hot.replay(incoming, response), headers: sent };
}

describe("replays and content codings", () => {
  it("replays an answer that does not vary by encoding (the control)", () => {
    expect(replayed({}, "gzip").answered).toBe(true);
  });

  it.each([
    [{ "content-encoding": "br", vary: "Accept-Encoding" }],
    [{ "content-encoding": "gzip" }],
    [{ vary: "Accept-Encoding" }],
    [{ vary: "Authorization, accept-encoding" }],
  ])("never keeps %j", (headers) => {
    expect(replayed(headers).answered).toBe(false);
    expect(replayed(headers, "br").answered).toBe(false);
  });

  it("keeps an answer whose Content-Encoding is identity", () => {
    const { answered, headers } = replayed({ "content-encoding": "identity" }, "br");
    expect(answered).toBe(true);
    expect(headers).toContain("identity");
  });
});
