import { setTimeout as sleep } from "node:timers/promises";
import { fastifyCookie } from "@fastify/cookie";
import Fastify, { type FastifyRequest } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createFeedTotals } from "../../src/areas/web-ui/pages/feeds-page.js";
import { SESSION_COOKIE } from "../../src/areas/web-ui/session/cookies.js";
import { createUiSessions, type UiSessions } from "../../src/areas/web-ui/session/ui-sessions.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { manualClock } from "../helpers/clock.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * The web UI's own readers wired on PostgreSQL (cluster mode), as app.ts and the pages build them:
 * signed-in browsers' sessions (createUiSessions: a session started on one node is found on any),
 * and the feeds page's totals, kept until a write on any node.
 */

const config = { uiSessions: { idleMinutes: 30, absoluteHours: 12 } };
const ORIGIN = { address: "203.0.113.7", userAgent: "Laptop Browser" };

/** What the authentication hook hands the reader: a request with the session cookie, if any. */
const requestWith = (token: string | undefined) =>
  ({
    headers: token === undefined ? {} : { cookie: `${SESSION_COOKIE}=${token}` },
    session: null,
  }) as unknown as FastifyRequest;

describe.skipIf(!postgresInstalled())("web UI sessions and feed totals on PostgreSQL", () => {
  const time = manualClock();
  let node: NodeDatabase;
  let other: NodeDatabase;
  let sessions: UiSessions;
  let otherSessions: UiSessions;
  let userId: number;

  beforeAll(async () => {
    // readCookie parses with @fastify/cookie's parser, which the app's registration of it loads.
    const app = Fastify();
    await app.register(fastifyCookie);
    await app.ready();
    await app.close();
    const url = await testPostgres().createDatabase();
    node = await openNodeDatabase({ url, nodeId: "test", migrate: true });
    other = await openNodeDatabase({ url, nodeId: "other" });
    sessions = createUiSessions({ db: node.db, clock: time.clock, config });
    otherSessions = createUiSessions({ db: other.db, clock: time.clock, config });
    // The user's insert notifies the node's change feed: heard before the tests compare versions.
    let heard: () => void = () => undefined;
    const notified = new Promise<void>((resolve) => (heard = resolve));
    const stop = node.watch.onChange((table) => {
      if (table === "users") heard();
    });
    const { rows } = await node.db.pool.query<{ id: number }>(
      "INSERT INTO users (name, name_key, password_hash, created_at) VALUES ('Dave', 'dave', 'scrypt$dave', $1) RETURNING id",
      [time.at()],
    );
    userId = (rows[0] as { id: number }).id;
    await notified;
    stop();
  });
  afterAll(async () => {
    await other?.close();
    await node?.close();
  });

  it("a browser signed in on one node is signed in on every node, until it signs out", async () => {
    const before = node.watch.version();
    const started = await sessions.store.start(userId, ORIGIN);
    expect(started?.session.principal).toEqual({ type: "user", userId, userName: "Dave", via: "password" });
    const token = started?.token as string;

    const request = requestWith(token);
    expect(await otherSessions.principalOf(request)).toEqual({
      type: "user",
      userId,
      userName: "Dave",
      via: "password",
    });
    expect(request.session).toEqual({ _csrf: started?.session.csrfSecret, id: started?.session.id });
    const anonymous = requestWith(undefined);
    expect(await sessions.principalOf(anonymous)).toBeUndefined();
    expect(anonymous.session).toEqual({ _csrf: undefined, id: undefined });

    // Session writes are quiet: no node's caches are made stale by a sign-in.
    await sleep(100);
    expect(node.watch.version()).toBe(before);

    await otherSessions.store.end(token);
    expect(await sessions.principalOf(requestWith(token))).toBeUndefined();
  });

  it("lists a user's sessions and ends the others, across nodes", async () => {
    const here = await sessions.store.start(userId, ORIGIN);
    time.advance(1_000);
    const there = await otherSessions.store.start(userId, { address: "198.51.100.2", userAgent: "Phone" });
    const listed = await sessions.store.listOf(userId);
    expect(listed.map((summary) => summary.id)).toEqual([there?.session.id, here?.session.id]);
    expect(await sessions.store.endOthers(userId, here?.session.id as number)).toBe(1);
    expect(await otherSessions.principalOf(requestWith(there?.token))).toBeUndefined();
    expect(await otherSessions.principalOf(requestWith(here?.token))).toMatchObject({ userId });
    expect(await otherSessions.store.endOne(userId, here?.session.id as number)).toBe(true);
    expect(await sessions.store.listOf(userId)).toEqual([]);
  });

  it("an idle session ends on every node", async () => {
    const started = await sessions.store.start(userId, ORIGIN);
    time.advance(31 * 60_000);
    expect(await otherSessions.principalOf(requestWith(started?.token))).toBeUndefined();
    expect(await sessions.store.listOf(userId)).toEqual([]);
  });

  it("the feeds page's totals follow a write made on another node", async () => {
    const totals = createFeedTotals(node.db);
    expect(await totals()).toEqual(new Map());
    const at = new Date().toISOString();
    const { rows } = await other.db.pool.query<{ id: number }>(
      `INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at)
       VALUES ('files', 'asset', 'disk', '{}', $1, $1) RETURNING id`,
      [at],
    );
    const feedId = (rows[0] as { id: number }).id;
    for (const [file, size] of [
      ["a.txt", 10],
      ["b.txt", 32],
    ] as const) {
      await other.db.pool.query(
        `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, md5, sha1, sha512,
           created_at, modified_at)
         VALUES ($1, $2, $2, '', 0, $3, $4, 'md5', 'sha1', 'sha512', $5, $5)`,
        [feedId, file, file.padEnd(64, "0"), size, at],
      );
    }
    await vi.waitFor(async () => expect(await totals()).toEqual(new Map([[feedId, { items: 2, bytes: 42 }]])), {
      timeout: 5_000,
      interval: 20,
    });
  });
});
