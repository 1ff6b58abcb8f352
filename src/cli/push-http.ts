import http from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import { DomainError } from "../domain/errors.js";

/**
 * The few HTTP requests `wharf push` makes, on Node's own client: a body streams from its source
 * with backpressure, and an answer that comes before the body is sent (a refused key, a version
 * that exists: the server answers those without reading the upload) is read and reported instead
 * of the broken pipe that follows it.
 */

export interface Answer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: http.IncomingHttpHeaders;
  /** The body, cut at MAX_ANSWER_BYTES: answers here are JSON results or error messages. */
  readonly text: string;
}

export interface Request {
  readonly method: "GET" | "PUT";
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Readable;
}

const MAX_ANSWER_BYTES = 64 * 1024;
/** No byte either way for this long: the server or the network is gone. Validating a large package takes a while. */
const IDLE_TIMEOUT_MS = 5 * 60 * 1000;

export function send(request: Request): Promise<Answer> {
  const transport = request.url.protocol === "https:" ? https : http;
  return new Promise<Answer>((resolve, reject) => {
    let answered = false;
    const req = transport.request(request.url, { method: request.method, headers: request.headers });
    req.setTimeout(IDLE_TIMEOUT_MS, () =>
      req.destroy(unreachable(request.url, `no answer for ${IDLE_TIMEOUT_MS / 1000} seconds`)),
    );
    req.on("error", (error) => {
      // After an early answer the server closes the connection under the body still being sent.
      if (!answered) reject(error instanceof DomainError ? error : unreachable(request.url, error.message));
    });
    req.on("response", (response) => {
      answered = true;
      if (request.body) {
        request.body.unpipe(req);
        request.body.destroy();
      }
      const chunks: Buffer[] = [];
      let length = 0;
      response.on("data", (chunk: Buffer) => {
        if (length < MAX_ANSWER_BYTES) chunks.push(chunk);
        length += chunk.length;
      });
      response.on("error", (error) => reject(unreachable(request.url, error.message)));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? "",
          headers: response.headers,
          text: Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString("utf8"),
        }),
      );
    });
    if (request.body === undefined) {
      req.end();
      return;
    }
    request.body.on("error", (error) => {
      if (answered) return;
      answered = true; // the upload failed on this side: say why, not that the connection broke
      reject(error);
      req.destroy();
    });
    request.body.pipe(req);
  });
}

function unreachable(url: URL, detail: string): DomainError {
  return new DomainError("unavailable", "PUSH_SERVER_UNREACHABLE", `Could not talk to ${url.origin}: ${detail}.`);
}
