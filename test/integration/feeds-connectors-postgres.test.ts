import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Fastify from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type ConnectorService,
  connectorsArea,
  createConnectors,
  createConnectorUpstreams,
  findConnectorReference,
  type HealthScheduler,
} from "../../src/areas/connectors/index.js";
import { createFeedService, type FeedService } from "../../src/areas/management/index.js";
import { type Config, loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import type { MetadataDb } from "../../src/storage/metadata-db.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { type FakeUpstream, sendJson, startFakeUpstream } from "../helpers/connector-fixtures.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { newSecretBox } from "../helpers/secret-box.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * Feed management and connectors built on PostgreSQL (cluster mode), through their factories as
 * app.ts builds them: the feed service with the connectors area's findConnectorReference, the
 * connector service (health checks, resealing), and the upstreams' metadata cache and connector
 * lists, the latter following another node's change through the change feed.
 */

describe.skipIf(!postgresInstalled())("feeds and connectors on PostgreSQL", () => {
  let dir: string;
  let node: NodeDatabase;
  let other: NodeDatabase;
  let upstream: FakeUpstream;
  let config: Config;
  const secrets = newSecretBox();

  const feedsOn = (db: MetadataDb): FeedService =>
    createFeedService({ db, clock: systemClock, config, findConnector: findConnectorReference(db), secrets });
  const connectorsOn = (db: MetadataDb, feeds: FeedService): ConnectorService =>
    createConnectors({ db, clock: systemClock, config, feeds, secrets });

  let feeds: FeedService;
  let connectors: ConnectorService;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-feeds-pg-"));
    config = loadConfig({ WHARF_DATA_DIR: dir, WHARF_FETCH_ALLOW_PRIVATE: "true" });
    const url = await testPostgres().createDatabase();
    node = await openNodeDatabase({ url, nodeId: "test", migrate: true });
    other = await openNodeDatabase({ url, nodeId: "other" });
    upstream = await startFakeUpstream((request, response) => {
      if (request.url?.startsWith("/upack/remote/packages")) sendJson(response, 200, [{ name: "tool" }]);
      else response.writeHead(404).end();
    });
    feeds = feedsOn(node.db);
    connectors = connectorsOn(node.db, feeds);
  });
  afterAll(async () => {
    await upstream?.close();
    await other?.close();
    await node?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it("manages feeds: create, find by alternate name, update, rename, list, name conflicts, delete", async () => {
    const created = await feeds.createFeed({ name: "tools", feedType: "universal", alternateNames: ["t"] });
    expect(created).toMatchObject({ name: "tools", alternateNames: ["t"], feedType: "universal" });
    expect(await feeds.findScope("T")).toEqual({ id: created.id, name: "tools", group: undefined });
    expect((await feeds.getFeed("TOOLS")).id).toBe(created.id);

    await expect(feeds.createFeed({ name: "t", feedType: "universal" })).rejects.toMatchObject({
      kind: "conflict",
      code: "FEED_NAME_TAKEN",
    });
    const updated = await feeds.updateFeed("t", { name: "build-tools", description: "Build tools" });
    expect(updated).toMatchObject({ id: created.id, name: "build-tools", settings: { description: "Build tools" } });
    expect(await feeds.findFeed("tools")).toBeUndefined();

    await feeds.createFeed({ name: "apps", feedType: "universal" });
    expect((await feeds.listFeeds()).map((feed) => feed.name)).toEqual(["apps", "build-tools"]);
    expect(feeds.present(updated, { canPublish: true })).toMatchObject({
      name: "build-tools",
      endpointUrl: `http://localhost:${config.port}/upack/build-tools`,
    });

    await feeds.deleteFeed("apps");
    await feeds.deleteFeed("build-tools");
    await expect(feeds.deleteFeed("apps")).rejects.toMatchObject({ kind: "not_found", code: "FEED_NOT_FOUND" });
    expect(await feeds.listFeeds()).toEqual([]);
  });

  it("binds feeds to connectors: references checked, renames followed, deletion refused while in use", async () => {
    await connectors.createConnector({ name: "up", url: `${upstream.base}/upack/remote`, feedType: "universal" });
    await expect(
      feeds.createFeed({ name: "proxy", feedType: "universal", connectors: ["ghost"] }),
    ).rejects.toMatchObject({
      kind: "unprocessable",
      code: "CONNECTOR_NOT_FOUND",
    });
    const feed = await feeds.createFeed({ name: "proxy", feedType: "universal", connectors: ["UP"] });
    expect(feed.settings.connectors).toEqual(["up"]);

    await expect(connectors.deleteConnector("up")).rejects.toMatchObject({
      kind: "conflict",
      code: "CONNECTOR_IN_USE",
    });
    await connectors.updateConnector("up", { name: "upstream" });
    expect((await feeds.getFeed("proxy")).settings.connectors).toEqual(["upstream"]);

    await feeds.updateFeed("proxy", { connectors: [] });
    await connectors.deleteConnector("upstream");
    await expect(connectors.getConnector("upstream")).rejects.toMatchObject({
      kind: "not_found",
      code: "CONNECTOR_NOT_FOUND",
    });
    await feeds.deleteFeed("proxy");
  });

  it("refuses to lend a connector's stored credentials to a feed manager who may not manage connectors", async () => {
    await connectors.createConnector({
      name: "private",
      url: `${upstream.base}/upack/remote`,
      feedType: "universal",
      username: "api",
      password: "s3cret",
    });
    const lookUp = findConnectorReference(node.db);
    expect(await lookUp("PRIVATE")).toEqual({ name: "private", hasCredentials: true });
    expect(await lookUp("nobody")).toBeUndefined();
    const feedManager = { can: async () => false };
    await expect(
      feeds.createFeed({ name: "lent", feedType: "universal", connectors: ["private"] }, feedManager),
    ).rejects.toMatchObject({ kind: "forbidden", code: "CONNECTOR_CREDENTIALS_FORBIDDEN" });
    expect(await feeds.findFeed("lent")).toBeUndefined();
    await connectors.deleteConnector("private");
  });

  it("checks connectors' health, due checks only, and reseals passwords on PostgreSQL", async () => {
    const connector = await connectors.createConnector({
      name: "checked",
      url: `${upstream.base}/upack/remote`,
      feedType: "universal",
      username: "api",
      password: "pw",
    });
    expect(connector.health.state).toBe("unknown");
    expect(connectors.authorization(connector)).toEqual({
      authorization: `Basic ${Buffer.from("api:pw").toString("base64")}`,
    });
    const checked = await connectors.checkHealth("checked");
    expect(checked.health).toMatchObject({ state: "healthy", errorMessage: undefined });
    expect(await connectors.checkDue(3_600_000)).toEqual([]);
    const due = await connectors.checkDue(0);
    expect(due.map((change) => change.after.name)).toEqual(["checked"]);

    await connectors.updateConnector("checked", { url: `${upstream.base}/upack/missing` });
    expect((await connectors.checkHealth("checked")).health.state).toBe("error");
    expect(await connectors.resealPasswords()).toEqual({ resealed: 0, unreadable: [] });
    await connectors.deleteConnector("checked");
  });

  it("the area hands its scheduled checks to app.ts when asked (leadership), and they run on PostgreSQL", async () => {
    await connectors.createConnector({
      name: "scheduled",
      url: `${upstream.base}/upack/remote`,
      feedType: "universal",
    });
    const taken: HealthScheduler[] = [];
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    try {
      await app.register(connectorsArea, {
        db: node.db,
        clock: systemClock,
        config: { ...config, connectorHealthIntervalMs: 50 },
        feeds,
        secrets,
        connectors,
        takeHealthScheduler: (scheduler) => taken.push(scheduler),
      });
      await app.ready();
      expect(taken).toHaveLength(1);
      await sleep(120);
      // Not started by the area: nothing checked yet.
      expect((await connectors.getConnector("scheduled")).health.state).toBe("unknown");
      await taken[0]?.run();
      expect((await connectors.getConnector("scheduled")).health.state).toBe("healthy");
    } finally {
      await app.close();
    }
    await connectors.deleteConnector("scheduled");
  });

  it("keeps connectors' metadata answers in PostgreSQL, and follows another node's connector changes", async () => {
    const upstreams = createConnectorUpstreams({ db: node.db, clock: systemClock, config, connectors });
    await connectors.createConnector({ name: "cached", url: `${upstream.base}/upack/remote`, feedType: "universal" });
    const [cached] = await upstreams.connectorsOf(["cached", "ghost"]);
    expect(cached?.name).toBe("cached");
    if (cached === undefined) return;

    const request = { endpoint: "packages", query: {} } as const;
    expect(await upstreams.metadata(cached, request)).toEqual({ found: true, body: [{ name: "tool" }], stale: false });
    const asked = upstream.requests.length;
    expect(await upstreams.metadata(cached, request)).toEqual({ found: true, body: [{ name: "tool" }], stale: false });
    expect(upstream.requests.length).toBe(asked);
    const rows = await node.db.pool.query(
      "SELECT request_key, status FROM connector_metadata WHERE connector_id = $1",
      [cached.id],
    );
    expect(rows.rows).toEqual([{ request_key: "packages", status: 200 }]);

    // Renamed through another node: this node's remembered list goes with the change feed.
    const otherConnectors = connectorsOn(other.db, feedsOn(other.db));
    await otherConnectors.updateConnector("cached", { name: "renamed" });
    await vi.waitFor(async () => expect(await upstreams.connectorsOf(["cached"])).toEqual([]), {
      timeout: 5_000,
      interval: 20,
    });
    expect((await upstreams.connectorsOf(["renamed"])).map((c) => c.id)).toEqual([cached.id]);
    await otherConnectors.deleteConnector("renamed");
    await vi.waitFor(async () => expect(await upstreams.connectorsOf(["renamed"])).toEqual([]), {
      timeout: 5_000,
      interval: 20,
    });
  });
});
