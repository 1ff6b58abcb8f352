import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import yazl from "yazl";
import { type Receiver, startReceiver } from "../helpers/webhook-receiver.js";
import { type RunningServer, startServer } from "./process.js";

/**
 * Issue 17 section 3, "no event lost when the process dies right after a commit": the real server is
 * SIGKILLed while a delivery of an acknowledged upload is in flight (its receiver holds the request);
 * the next start on the same data directory sends that delivery again, and the receiver gets it.
 */

const KEY = `e2e-webhooks-${randomBytes(16).toString("hex")}`;
let dataDir: string;
let receiver: Receiver;
const running: RunningServer[] = [];

beforeEach(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-webhooks-crash-"));
  receiver = await startReceiver();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.stop()));
  await receiver.close();
  await fs.rm(dataDir, { recursive: true, force: true });
});

async function start(): Promise<RunningServer> {
  const server = await startServer({
    WHARF_DATA_DIR: dataDir,
    WHARF_ADMIN_API_KEY: KEY,
    WHARF_FETCH_ALLOW_PRIVATE: "true",
    WHARF_WEBHOOK_POLL_SECONDS: "0.2",
  });
  running.push(server);
  return server;
}

async function call(server: RunningServer, method: string, url: string, body?: object | Buffer): Promise<Response> {
  return fetch(`${server.url}${url}`, {
    method,
    headers: { "X-ApiKey": KEY, "Content-Type": Buffer.isBuffer(body) ? "application/zip" : "application/json" },
    ...(body === undefined ? {} : { body: Buffer.isBuffer(body) ? new Uint8Array(body) : JSON.stringify(body) }),
  });
}

async function upack(): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from(JSON.stringify({ name: "crashy", version: "1.0.0" })), "upack.json");
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe("webhook delivery across a crash", () => {
  it("a delivery in flight when the process is killed is sent by the next start", { timeout: 60_000 }, async () => {
    const first = await start();
    expect(
      (await call(first, "POST", "/api/management/feeds/create", { name: "main", feedType: "universal" })).status,
    ).toBe(201);
    const hook = await call(first, "POST", "/api/webhooks", { name: "ci", feed: "main", url: `${receiver.base}/hook` });
    expect(hook.status).toBe(201);
    receiver.answer = () => undefined; // holds every request: the delivery stays in flight
    expect((await call(first, "PUT", "/upack/main/upload", await upack())).status).toBe(201);
    const [held] = await receiver.waitFor(1);
    process.kill(first.pid, "SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");

    receiver.answer = (_request, response) => response.writeHead(200).end("ok");
    const second = await start();
    const [, again] = await receiver.waitFor(2, 20_000);
    expect(again?.body).toBe(held?.body);
    expect(again?.headers["x-wharf-delivery"]).toBe(held?.headers["x-wharf-delivery"]);
    expect(JSON.parse(again?.body ?? "{}")).toMatchObject({ event: "package.added", package: { name: "crashy" } });
    const id = ((await hook.json()) as { id: number }).id;
    const deliveries = async () =>
      (await (await call(second, "GET", `/api/webhooks/${id}/deliveries`)).json()) as {
        state: string;
        attempts: number;
      }[];
    let log = await deliveries();
    for (let i = 0; i < 50 && log[0]?.state !== "succeeded"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      log = await deliveries();
    }
    expect(log).toEqual([expect.objectContaining({ state: "succeeded", attempts: 1 })]);
  });
});
