import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Clock } from "../../src/domain/clock.js";
import { cacheVersionOf } from "../../src/storage/metadata-db.js";
import { PostgresChangeWatch } from "../../src/storage/postgres/change-feed.js";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { basic, createFeedKey, createUser, grant, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { buildUpack, createUpackFixtures, type UpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Small downloads repeated over real sockets are replayed from memory before Fastify sees them
 * (http/hot-responses.ts). A replay must be indistinguishable from the route's own answer, and
 * must follow every check and write the full path follows; anything it cannot answer exactly
 * goes the full way. `wharf_http_replayed_responses_total` tells the tests that replays happened.
 */

const SECOND_FEED = "other";
const URL_PATH = "/upack/main/download/lib/1.0.0";

describe("replayed small downloads", () => {
  let t: TestApp;
  let u: UpackFixtures;
  let base: string;
  let now = Date.now();
  const clock: Clock = { now: () => new Date(now) };
  let packageBytes: Buffer;
  let key: string;

  const get = (url: string, headers: Record<string, string> = {}, method = "GET") =>
    fetch(`${base}${url}`, { method, headers });
  const download = (headers: Record<string, string> = { "x-apikey": key }) => get(URL_PATH, headers);
  /** Replays so far, from the metrics a full-control key reads. */
  async function replays(): Promise<number> {
    const text = await (await get("/metrics", { "x-apikey": t.adminKey })).text();
    const line = text.split("\n").find((l) => l.startsWith("wharf_http_replayed_responses_total{"));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  /** Sends `request` once to let the route keep its answer, then again: the count of replays it took. */
  async function replaysOf(
    request: () => Promise<Response>,
  ): Promise<{ first: Response; second: Response; replayed: number }> {
    const first = await request();
    await first.arrayBuffer();
    const before = await replays();
    const second = await request();
    return { first, second, replayed: (await replays()) - before };
  }
  const outside = (sql: string, ...params: unknown[]) => writeFromOutside(t, sql, ...params);

  beforeAll(async () => {
    t = await buildTestApp({ clock });
    u = createUpackFixtures(t);
    await u.createFeed("main");
    await u.createFeed(SECOND_FEED);
    base = await t.app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => t?.close());

  beforeEach(async () => {
    packageBytes = await buildUpack({ name: "lib", version: "1.0.0", files: { "a.txt": `content ${Math.random()}` } });
    const put = await get("/upack/main/delete/lib/1.0.0", { "x-apikey": t.adminKey }, "POST");
    expect([200, 404]).toContain(put.status);
    const upload = await fetch(`${base}/upack/main/upload`, {
      method: "PUT",
      headers: { "x-apikey": t.adminKey, "content-type": "application/octet-stream" },
      body: new Uint8Array(packageBytes),
    });
    expect(upload.status).toBe(201);
    key = await createFeedKey(t.database, "main", ["view"]);
  });

  it("answers as the route does, with a new request id each time, and counts every download", async () => {
    const countBefore = (await u.downloadsOf("main", "", "lib", "1.0.0")).version;
    const { first, second, replayed } = await replaysOf(() => download());
    expect(replayed).toBe(1);
    expect(second.status).toBe(200);
    expect(Buffer.from(await second.arrayBuffer()).equals(packageBytes)).toBe(true);
    const headersOf = (res: Response) =>
      Object.fromEntries([...res.headers].filter(([name]) => name !== "x-request-id" && name !== "date"));
    expect(headersOf(second)).toEqual(headersOf(first));
    expect(second.headers.get("content-disposition")).toBe('attachment; filename="lib.1.0.0.upack"');
    expect(second.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));

    for (let i = 0; i < 5; i++) expect((await download()).status).toBe(200);
    expect((await u.downloadsOf("main", "", "lib", "1.0.0")).version).toBe(countBefore + 7);
    const metrics = await (await get("/metrics", { "x-apikey": t.adminKey })).text();
    expect(metrics).toMatch(
      /wharf_http_requests_total\{method="GET",route="\/upack\/:feed\/download\/\*",status="200"\} \d+/,
    );
  });

  it("checks each caller's own credentials, and leaves every refusal to the route", async () => {
    // Keys are made first: any write empties what is kept. Then each is known to the caches.
    const elsewhere = await createFeedKey(t.database, SECOND_FEED, ["view"]);
    const userId = await createUser(t.database, "dev", "secret-password");
    const outsider = await createUser(t.database, "outsider", "other-password");
    await grant(t.database, { user: userId, attributes: ["Feeds_DownloadPackage"], feed: "main" });
    await grant(t.database, { user: outsider, attributes: ["Feeds_DownloadPackage"], feed: SECOND_FEED });
    expect((await download({ "x-apikey": elsewhere })).status).toBe(403);
    expect((await download(basic("outsider", "other-password"))).status).toBe(403);
    await (await download()).arrayBuffer(); // kept for the feed key of beforeEach

    const before = await replays();
    expect((await download({ "x-apikey": elsewhere })).status).toBe(403);
    expect((await download(basic("outsider", "other-password"))).status).toBe(403);
    expect((await download({ "x-apikey": "not-a-key" })).status).toBe(403);
    const anonymous = await download({});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe('Basic realm="Wharf"');
    expect(await replays()).toBe(before);

    // Other transports of the same key, and a user's own grants, are replayed once known.
    expect((await replaysOf(() => download(basic("api", key)))).replayed).toBe(1);
    const asUser = await replaysOf(() => download(basic("dev", "secret-password")));
    expect([asUser.first.status, asUser.second.status, asUser.replayed]).toEqual([200, 200, 1]);
  });

  it("follows keys revoked here at once, and by another process within a millisecond", async () => {
    expect((await replaysOf(() => download())).replayed).toBe(1);
    const list = await get("/api/api-keys/list", { "x-apikey": t.adminKey });
    const created = ((await list.json()) as { id: number; displayName?: string }[]).at(-1);
    expect(created).toBeDefined();
    const deleted = await get(`/api/api-keys/delete?id=${created?.id}`, { "x-apikey": t.adminKey }, "POST");
    expect(deleted.status).toBe(200);
    expect((await download()).status).toBe(403);

    const second = await createFeedKey(t.database, "main", ["view"]);
    expect((await replaysOf(() => download({ "x-apikey": second }))).replayed).toBe(1);
    await outside(
      "DELETE FROM api_keys WHERE key_type = 'Feed' AND feed_id = (SELECT feed_id FROM feed_names WHERE name_key = 'main')",
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await download({ "x-apikey": second })).status).toBe(403);
  });

  it("follows deleted packages and expired keys", async () => {
    const expiring = await createFeedKey(t.database, "main", ["view"], {
      expiresAt: new Date(now + 3_600_000).toISOString(),
    });
    expect((await replaysOf(() => download({ "x-apikey": expiring }))).replayed).toBe(1);
    now += 2 * 3_600_000;
    try {
      expect((await download({ "x-apikey": expiring })).status).toBe(403);
    } finally {
      now = Date.now();
    }
    expect((await get("/upack/main/delete/lib/1.0.0", { "x-apikey": t.adminKey }, "POST")).status).toBe(200);
    const gone = await download();
    expect(gone.status).toBe(404);
    expect(await gone.text()).toMatch(/not found/i);
  });

  // PostgreSQL alone: SQLite's watch cannot tell tables apart (any commit anywhere is a change),
  // and a cluster's other nodes write there through their own connections.
  it.skipIf(!testsRunOnPostgres())(
    "keeps replaying after another node writes a table no cache reads, not after it writes one a cache reads",
    async () => {
      const feed = cacheVersionOf(t.database);
      if (!(feed instanceof PostgresChangeWatch)) throw new Error("a cluster node keys its caches on its change feed");
      const otherNode = new pg.Client({ connectionString: t.config.databaseUrl, application_name: "wharf other node" });
      await otherNode.connect();
      const heard = (table: string) =>
        new Promise<void>((resolve) => {
          const stop = feed.onChange((notified) => {
            if (notified !== table) return;
            stop();
            resolve();
          });
        });
      try {
        await (await download()).arrayBuffer();
        const before = await replays();
        const audited = heard("audit_records");
        await otherNode.query(
          `INSERT INTO audit_records (at, actor_kind, actor_name, address, action, object, status, outcome, request_id)
           VALUES ($1, 'key', 'other node', '127.0.0.1', 'test', 'test', 200, 'success', 'test')`,
          [new Date().toISOString()],
        );
        await audited;
        expect((await download()).status).toBe(200);
        expect(await replays()).toBe(before + 1);

        const renamed = heard("feeds");
        await otherNode.query(
          "UPDATE feeds SET name = name WHERE id = (SELECT feed_id FROM feed_names WHERE name_key = 'main')",
        );
        await renamed;
        expect((await download()).status).toBe(200);
        expect(await replays()).toBe(before + 1);
      } finally {
        await otherNode.end();
      }
    },
  );

  it("keeps no body over 64 KiB: larger downloads always take the route", async () => {
    const large = await buildUpack({ name: "large", version: "1.0.0", files: { "data.bin": randomBytes(100 * 1024) } });
    const upload = await fetch(`${base}/upack/main/upload`, {
      method: "PUT",
      headers: { "x-apikey": t.adminKey, "content-type": "application/octet-stream" },
      body: new Uint8Array(large),
    });
    expect(upload.status).toBe(201);
    const { first, second, replayed } = await replaysOf(() =>
      get("/upack/main/download/large/1.0.0", { "x-apikey": key }),
    );
    expect([first.status, second.status, replayed]).toEqual([200, 200, 0]);
    expect(Buffer.from(await second.arrayBuffer()).equals(large)).toBe(true);
  });

  it("leaves ranges, conditions, query keys, HEAD and announced deployments to the route", async () => {
    await (await download()).arrayBuffer();
    const before = await replays();
    const range = await download({ "x-apikey": key, range: "bytes=0-9" });
    expect(range.status).toBe(206);
    expect(Buffer.from(await range.arrayBuffer()).equals(packageBytes.subarray(0, 10))).toBe(true);
    const etag = range.headers.get("etag") ?? "";
    expect((await download({ "x-apikey": key, "if-none-match": etag })).status).toBe(304);
    // A key in the query string is the caller's, whatever the headers say.
    expect((await get(`${URL_PATH}?key=not-a-key`)).status).toBe(403);
    const head = await get(URL_PATH, { "x-apikey": key }, "HEAD");
    expect([head.status, head.headers.get("content-length")]).toEqual([200, String(packageBytes.length)]);
    const announced = await download({
      "x-apikey": key,
      "x-proget-deployment-application": "Shop",
      "x-proget-deployment-description": "release 12",
      "x-proget-deployment-target": "web-01",
    });
    expect(announced.status).toBe(200);
    await announced.arrayBuffer();
    expect(await replays()).toBe(before);
    const recorded = await readOne(
      t.database,
      "SELECT COUNT(*) AS n FROM package_deployments WHERE application = 'Shop' AND target = 'web-01'",
    );
    expect(recorded).toEqual({ n: 1 });
  });
});
