import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { loadConfig } from "../../src/config.js";
import type { Clock } from "../../src/domain/clock.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { manualClock } from "../helpers/clock.js";
import { buildUpack } from "../helpers/upack-fixtures.js";
import { startReceiver, verifySignature } from "../helpers/webhook-receiver.js";

/**
 * Delivery is durable (issue 17 section 3): an event committed with its upload is delivered even
 * when the process ends before fanning it out, or before a delivery succeeds; the next start on the
 * same data directory sends it.
 */

const ADMIN = `admin-${randomBytes(12).toString("hex")}`;
const admin = { "x-apikey": ADMIN };
const dirs: string[] = [];

interface Started {
  readonly app: FastifyInstance;
  readonly db: Db;
  close(): Promise<void>;
}

/** A Wharf on `dataDir` as a restart builds it: the data stays. */
async function start(dataDir: string, clock: Clock, env: Record<string, string> = {}): Promise<Started> {
  const config = loadConfig({
    WHARF_DATA_DIR: dataDir,
    WHARF_LOG_LEVEL: "silent",
    WHARF_FETCH_ALLOW_PRIVATE: "true",
    WHARF_WEBHOOK_POLL_SECONDS: "0.05",
    ...env,
  });
  const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
  bootstrapAdminKey(db, dataDir, ADMIN, clock);
  const app = await buildApp(config, { db, blobs: createFileBlobStore(dataDir), clock, logger: false });
  await app.ready();
  return {
    app,
    db,
    async close() {
      await app.close();
      db.close();
    },
  };
}

afterAll(async () => {
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

async function prepared(receiverBase: string, clock: Clock) {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-webhooks-"));
  dirs.push(dir);
  const first = await start(dir, clock);
  const feed = await first.app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers: admin,
    payload: { name: "main", feedType: "universal" },
  });
  expect(feed.statusCode).toBe(201);
  const hook = await first.app.inject({
    method: "POST",
    url: "/api/webhooks",
    headers: admin,
    payload: { name: "durable", feed: "main", url: `${receiverBase}/hook`, events: ["package.added"] },
  });
  expect(hook.statusCode).toBe(201);
  return { dir, first, secret: hook.json().secret as string };
}

async function upload(s: Started, version: string) {
  const res = await s.app.inject({
    method: "PUT",
    url: "/upack/main/upload",
    headers: admin,
    payload: await buildUpack({ name: "kept", version }),
  });
  expect(res.statusCode, res.body).toBe(201);
}

describe("durable delivery", () => {
  it("an event the process never fanned out is delivered by the next start", async () => {
    const receiver = await startReceiver();
    const time = manualClock();
    try {
      const { dir, first, secret } = await prepared(receiver.base, time.clock);
      // The commit is done; then the process dies before its dispatcher runs. The state that leaves
      // is made here by undoing the fan-out (a kill -9 cannot be timed between two turns of the loop).
      await upload(first, "1.0.0");
      await first.close();
      const db = openDatabase(path.join(dir, "wharf.sqlite"));
      db.exec("DELETE FROM webhook_deliveries; UPDATE lifecycle_events SET dispatched_at = NULL");
      expect(db.prepare("SELECT count(*) FROM lifecycle_events WHERE type = 'package.added'").pluck().get()).toBe(1);
      db.close();
      receiver.received.length = 0;

      const second = await start(dir, time.clock);
      try {
        const [request] = await receiver.waitFor(1);
        expect(JSON.parse(request?.body ?? "{}")).toMatchObject({
          event: "package.added",
          package: { name: "kept", version: "1.0.0" },
        });
        expect(
          verifySignature(
            request?.headers["x-wharf-signature"] as string,
            request?.body ?? "",
            secret,
            Math.floor(time.clock.now().getTime() / 1000),
          ),
        ).toBe(true);
        expect(
          second.db.prepare("SELECT count(*) FROM lifecycle_events WHERE dispatched_at IS NULL").pluck().get(),
        ).toBe(0);
      } finally {
        await second.close();
      }
    } finally {
      await receiver.close();
    }
  });

  it("a delivery whose receiver was down when the process stopped is sent after the next start", async () => {
    // A port with nothing listening: the first attempt fails to connect.
    const probe = await startReceiver();
    const port = Number(new URL(probe.base).port);
    await probe.close();
    const time = manualClock();
    const { dir, first } = await prepared(`http://127.0.0.1:${port}`, time.clock);
    await upload(first, "2.0.0");
    const failed = first.db.prepare("SELECT state, attempts, last_error FROM webhook_deliveries");
    for (let i = 0; i < 200 && (failed.get() as { attempts: number } | undefined)?.attempts !== 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(failed.get()).toMatchObject({
      state: "pending",
      attempts: 1,
      last_error: expect.stringContaining("ECONNREFUSED"),
    });
    await first.close();

    const receiver = await startReceiver(port);
    try {
      time.advance(30_000);
      const second = await start(dir, time.clock);
      try {
        const [request] = await receiver.waitFor(1);
        expect(JSON.parse(request?.body ?? "{}")).toMatchObject({
          event: "package.added",
          package: { version: "2.0.0" },
        });
        const row = second.db.prepare("SELECT state, attempts FROM webhook_deliveries");
        for (let i = 0; i < 100 && (row.get() as { state: string }).state !== "succeeded"; i++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(row.get()).toEqual({ state: "succeeded", attempts: 2 });
      } finally {
        await second.close();
      }
    } finally {
      await receiver.close();
    }
  });
});
