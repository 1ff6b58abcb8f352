import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loggerOptions } from "../../src/http/logging.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createFeedKey, createPersonalKey, createSystemKey, createUser, grant, readOne } from "../helpers/fixtures.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";
import { type Receiver, startReceiver } from "../helpers/webhook-receiver.js";

/**
 * Who may manage which webhooks (a global one: Admin_ConfigureProGet or a full-control key; a
 * feed's: Admin_ManageFeed there or a `feeds` key), that no secret reaches an answer or a log line,
 * and that a receiver that never answers costs an upload nothing.
 */

let t: TestApp;
let receiver: Receiver;
const logs: string[] = [];
let feedManager: string; // a user's personal key, Admin_ManageFeed on "main" only
let feedsKey: string; // a System key with the `feeds` scope
let viewer: string; // a user with Feeds_ViewFeed only
let feedKey: string; // a Feed key of "main" with every permission

beforeAll(async () => {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString("utf8"));
      callback();
    },
  });
  t = await buildTestApp({
    env: { WHARF_FETCH_ALLOW_PRIVATE: "true", WHARF_WEBHOOK_TIMEOUT_SECONDS: "30", WHARF_WEBHOOK_POLL_SECONDS: "0.05" },
    logger: { ...(loggerOptions("trace") as object), stream },
  });
  receiver = await startReceiver();
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.createFeed("other");
  const manager = await createUser(t.database, "manager");
  await grant(t.database, { user: manager, attributes: ["Admin_ManageFeed"], feed: "main" });
  feedManager = await createPersonalKey(t.database, manager);
  const reader = await createUser(t.database, "reader");
  await grant(t.database, { user: reader, attributes: ["Feeds_ViewFeed"] });
  viewer = await createPersonalKey(t.database, reader);
  feedsKey = await createSystemKey(t.database, ["feeds"]);
  feedKey = await createFeedKey(t.database, "main", ["view", "add", "promote", "delete"]);
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const as = (key: string | undefined, method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) =>
  t.app.inject({
    method,
    url,
    headers: key === undefined ? {} : { "x-apikey": key },
    ...(payload === undefined ? {} : { payload }),
  });

describe("webhook privileges", () => {
  let globalId: number;
  let mainId: number;
  let otherId: number;

  it("a global webhook needs Admin_ConfigureProGet; a feed's, Admin_ManageFeed on that feed", async () => {
    const body = (feed?: string) => ({
      name: `on ${feed ?? "all"}`,
      url: `${receiver.base}/x`,
      ...(feed ? { feed } : {}),
    });
    expect((await as(undefined, "POST", "/api/webhooks", body())).statusCode).toBe(401);
    expect((await as(feedManager, "POST", "/api/webhooks", body())).statusCode).toBe(403);
    expect((await as(feedsKey, "POST", "/api/webhooks", body())).statusCode).toBe(403);
    expect((await as(viewer, "POST", "/api/webhooks", body("main"))).statusCode).toBe(403);
    expect((await as(feedKey, "POST", "/api/webhooks", body("main"))).statusCode).toBe(403);
    expect((await as(feedManager, "POST", "/api/webhooks", body("other"))).statusCode).toBe(403);
    // An unknown feed looks like a forbidden one to those without a global grant.
    expect((await as(feedManager, "POST", "/api/webhooks", body("nowhere"))).statusCode).toBe(403);

    const global = await as(t.adminKey, "POST", "/api/webhooks", body());
    expect(global.statusCode).toBe(201);
    globalId = global.json().id;
    const main = await as(feedManager, "POST", "/api/webhooks", body("main"));
    expect(main.statusCode, main.body).toBe(201);
    expect(main.json().createdBy).toBe("manager");
    mainId = main.json().id;
    const other = await as(feedsKey, "POST", "/api/webhooks", body("other"));
    expect(other.statusCode).toBe(201);
    otherId = other.json().id;
  });

  it("each caller lists, reads, tests and changes only the webhooks it may manage", async () => {
    const ids = async (key: string) =>
      ((await as(key, "GET", "/api/webhooks")).json() as { id: number }[]).map((w) => w.id);
    expect(await ids(t.adminKey)).toEqual([globalId, mainId, otherId]);
    expect(await ids(feedManager)).toEqual([mainId]);
    expect(await ids(feedsKey)).toEqual([mainId, otherId]);
    expect(await ids(viewer)).toEqual([]);
    expect((await as(undefined, "GET", "/api/webhooks")).json()).toEqual([]);

    for (const [method, suffix] of [
      ["GET", ""],
      ["PATCH", ""],
      ["DELETE", ""],
      ["POST", "/test"],
      ["GET", "/deliveries"],
    ] as const) {
      const payload = method === "PATCH" ? { name: "taken over" } : undefined;
      expect((await as(feedManager, method, `/api/webhooks/${globalId}${suffix}`, payload)).statusCode).toBe(403);
      expect((await as(feedManager, method, `/api/webhooks/${otherId}${suffix}`, payload)).statusCode).toBe(403);
      expect((await as(undefined, method, `/api/webhooks/${mainId}${suffix}`, payload)).statusCode).toBe(401);
      expect((await as(feedKey, method, `/api/webhooks/${mainId}${suffix}`, payload)).statusCode).toBe(403);
    }
    expect((await as(feedManager, "GET", `/api/webhooks/${mainId}`)).statusCode).toBe(200);
    expect((await as(feedManager, "POST", `/api/webhooks/${mainId}/test`)).json().state).toBe("succeeded");
    // Nothing changed by the refused calls.
    expect((await as(t.adminKey, "GET", `/api/webhooks/${globalId}`)).json().name).toBe("on all");
  });

  it("no secret reaches an answer or a log line: given, generated, or replaced", async () => {
    const given = "given-secret-abcdefghijklmnop";
    const created = await as(t.adminKey, "POST", "/api/webhooks", {
      name: "quiet",
      url: `${receiver.base}/q`,
      secret: given,
    });
    const id = created.json().id as number;
    const generated = (
      await as(t.adminKey, "POST", "/api/webhooks", { name: "quiet2", url: `${receiver.base}/q` })
    ).json();
    const replaced = "replaced-secret-abcdefghijklmnop";
    await as(t.adminKey, "PATCH", `/api/webhooks/${id}`, { secret: replaced });
    await as(t.adminKey, "POST", `/api/webhooks/${id}/test`);
    await as(t.adminKey, "POST", `/api/webhooks/${generated.id}/test`);
    const upload = await t.app.inject({
      method: "PUT",
      url: "/upack/main/upload",
      headers: { "x-apikey": t.adminKey },
      payload: await buildUpack({ name: "quiet", version: "1.0.0" }),
    });
    expect(upload.statusCode).toBe(201);
    await receiver.waitFor(receiver.received.length + 1).catch(() => undefined);
    const answers = [
      (await as(t.adminKey, "GET", "/api/webhooks")).body,
      (await as(t.adminKey, "GET", `/api/webhooks/${id}`)).body,
      (await as(t.adminKey, "GET", `/api/webhooks/${id}/deliveries`)).body,
      (await as(t.adminKey, "GET", `/api/webhooks/${generated.id}/deliveries`)).body,
    ].join("\n");
    const logged = logs.join("");
    expect(logged.length).toBeGreaterThan(0);
    for (const secret of [given, generated.secret as string, replaced]) {
      expect(answers).not.toContain(secret);
      expect(logged).not.toContain(secret);
    }
    // The creation answer had it, once.
    expect(created.json().secret).toBe(given);
  });

  it("a receiver that never answers does not slow uploads", async () => {
    const hanging = await as(t.adminKey, "POST", "/api/webhooks", { name: "hangs", url: `${receiver.base}/hang` });
    expect(hanging.statusCode).toBe(201);
    receiver.answer = () => undefined; // never answers: each request is held until the webhook timeout (30 s)
    const before = receiver.received.length;
    const upload = (i: number) =>
      buildUpack({ name: "busy", version: `1.0.${i}` }).then((payload) =>
        t.app.inject({ method: "PUT", url: "/upack/main/upload", headers: { "x-apikey": t.adminKey }, payload }),
      );
    // The first upload's deliveries take every slot of the sender (4 at once, the default
    // concurrency), held by the receiver.
    expect((await upload(0)).statusCode).toBe(201);
    await receiver.waitFor(before + 4);
    // Uploads answer all the same: they write their event and never wait for a delivery or a slot.
    // No wall-clock bound (under load an upload alone may take a second): one that waited would
    // answer only at the webhook timeout, its delivery then ended failed, as the checks below see.
    for (let i = 1; i < 5; i++) expect((await upload(i)).statusCode).toBe(201);
    const count = async (sql: string) => (await readOne<{ n: number }>(t.database, sql))?.n;
    // Each upload made its delivery to "hangs", none of them done: they were under way, or waiting
    // for a slot, while the uploads answered.
    await expect
      .poll(
        () =>
          count(`SELECT count(*) AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
                  WHERE w.name = 'hangs' AND state = 'pending'`),
        { timeout: 2_000, interval: 20 },
      )
      .toBe(5);
    expect(
      await count("SELECT count(*) AS n FROM webhook_deliveries WHERE attempts > 0 AND state <> 'succeeded'"),
    ).toBe(0);
  });
});
