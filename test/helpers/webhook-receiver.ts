import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A webhook receiver on loopback: records every request and answers as `answer` says (200 by default). */
export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Receiver {
  readonly base: string;
  readonly received: Received[];
  /** Replaces how requests are answered; one that does not answer holds the request open. */
  answer: (request: Received, response: ServerResponse) => unknown;
  /** Resolves once `count` requests have arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const waiting: Array<() => void> = [];
  const receiver: Receiver = {
    base: "",
    received,
    answer: (_request, response) => response.writeHead(200, { "content-type": "text/plain" }).end("ok"),
    waitFor(count, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${received.length} of ${count} requests arrived`)), timeoutMs);
        const check = () => {
          if (received.length < count) return false;
          clearTimeout(timer);
          resolve(received);
          return true;
        };
        // Each arrival wakes every waiter once: one still short of its count waits again.
        const wait = () => {
          if (!check()) waiting.push(wait);
        };
        wait();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const seen = {
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      received.push(seen);
      receiver.answer(seen, response);
      for (const wake of waiting.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  Object.assign(receiver, { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  return receiver;
}

/**
 * What a receiver should do with X-Wharf-Signature, written here from the README's description and
 * not from Wharf's code: recompute the HMAC over `<t>.<body>`, compare in constant time, and refuse
 * a timestamp older than `toleranceSeconds`.
 */
export function verifySignature(
  header: string | undefined,
  body: string,
  secret: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  if (header === undefined) return false;
  const parts = new Map(header.split(",").map((part) => part.split("=", 2) as [string, string]));
  const t = Number(parts.get("t"));
  const given = parts.get("v1");
  if (!Number.isInteger(t) || given === undefined || !/^[0-9a-f]{64}$/.test(given)) return false;
  if (Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = createHmac("sha256", secret).update(`${t}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(given, "hex"));
}
