import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { manualClock } from "../helpers/clock.js";
import { execute, readOne } from "../helpers/fixtures.js";
import { releasesFixtures } from "../helpers/releases-fixtures.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";
import { type Receiver, startReceiver, verifySignature } from "../helpers/webhook-receiver.js";

/**
 * Webhooks (issue 17 section 3) as a story: created through the API, told of an upload with a
 * signed JSON body at the URL the template makes, retried with backoff until the receiver
 * recovers, tested by hand, and logged per webhook.
 */

const time = manualClock();
let t: TestApp;
let receiver: Receiver;
const admin = () => ({ "x-apikey": t.adminKey });
const nowSeconds = () => Math.floor(time.clock.now().getTime() / 1000);

beforeAll(async () => {
  t = await buildTestApp({
    clock: time.clock,
    env: { WHARF_FETCH_ALLOW_PRIVATE: "true", WHARF_WEBHOOK_POLL_SECONDS: "0.05" },
  });
  receiver = await startReceiver();
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.createFeed("other");
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});
beforeEach(() => {
  receiver.received.length = 0;
  receiver.answer = (_request, response) => response.writeHead(204).end();
});

const call = (method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", url: string, payload?: unknown) =>
  t.app.inject({ method, url, headers: admin(), ...(payload === undefined ? {} : { payload: payload as object }) });

async function upload(feed: string, name: string, version: string) {
  const res = await t.app.inject({
    method: "PUT",
    url: `/upack/${feed}/upload`,
    headers: admin(),
    payload: await buildUpack({ group: "tools/cli", name, version }),
  });
  expect(res.statusCode, res.body).toBe(201);
}

async function createWebhook(body: Record<string, unknown>) {
  const res = await call("POST", "/api/webhooks", body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: number; secret: string } & Record<string, unknown>;
}

/** Waits (real time) until the webhook's newest delivery is in `state`. */
async function deliveryIn(id: number, state: string, attempts?: number) {
  for (let i = 0; i < 200; i++) {
    const [latest] = (await call("GET", `/api/webhooks/${id}/deliveries`)).json() as Record<string, unknown>[];
    if (latest?.state === state && (attempts === undefined || latest.attempts === attempts)) return latest;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no delivery of webhook ${id} reached ${state}`);
}

describe("webhooks", () => {
  it("create answers the secret once; get and list never show it", async () => {
    const created = await createWebhook({ name: "ci", url: `${receiver.base}/hook`, events: ["package.added"] });
    expect(created).toMatchObject({
      name: "ci",
      feed: null,
      events: ["package.added"],
      method: "POST",
      headers: {},
      active: true,
      url: `${receiver.base}/hook`,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const got = await call("GET", `/api/webhooks/${created.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.body).not.toContain(created.secret);
    expect(got.json()).not.toHaveProperty("secret");
    const listed = await call("GET", "/api/webhooks");
    expect(listed.body).not.toContain(created.secret);
    // Nor is it stored as given: sealed at rest.
    const stored = (
      await readOne<{ secret: string }>(t.database, "SELECT secret FROM webhooks WHERE id = ?", created.id)
    )?.secret;
    expect(stored).toMatch(/^v1:/);
    expect(stored).not.toContain(created.secret);
    expect((await call("DELETE", `/api/webhooks/${created.id}`)).statusCode).toBe(204);
    expect((await call("GET", `/api/webhooks/${created.id}`)).statusCode).toBe(404);
  });

  it("delivers an upload: the template's URL, the signed JSON body, Wharf's and the webhook's headers", async () => {
    const secret = "a-secret-of-our-own-0123456789";
    const hook = await createWebhook({
      name: "main's",
      feed: "main",
      events: ["package.added"],
      url: `${receiver.base}/hooks/{feed}/{group}/{name}?v={version}&e={event}`,
      headers: { "X-Token": "receiver-token" },
      secret,
    });
    expect(hook.secret).toBe(secret);
    await upload("other", "elsewhere", "1.0.0"); // another feed: not this webhook's
    await upload("main", "tool", "1.2.3");
    const [request] = await receiver.waitFor(1);
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/hooks/main/tools%2Fcli/tool?v=1.2.3&e=package.added");
    expect(request?.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(request?.headers["x-wharf-event"]).toBe("package.added");
    expect(request?.headers["x-token"]).toBe("receiver-token");
    const body = JSON.parse(request?.body ?? "") as Record<string, unknown>;
    expect(body).toMatchObject({
      event: "package.added",
      eventId: expect.any(Number),
      feed: { name: "main" },
      package: { group: "tools/cli", name: "tool", version: "1.2.3" },
      actor: expect.any(String),
      data: {},
      webhook: { id: hook.id, name: "main's" },
    });
    const signature = request?.headers["x-wharf-signature"] as string;
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(signature, request?.body ?? "", secret, nowSeconds())).toBe(true);
    // A changed body, another secret or an old timestamp do not verify.
    expect(verifySignature(signature, (request?.body ?? "").replace("1.2.3", "6.6.6"), secret, nowSeconds())).toBe(
      false,
    );
    expect(verifySignature(signature, request?.body ?? "", `${secret}x`, nowSeconds())).toBe(false);
    expect(verifySignature(signature, request?.body ?? "", secret, nowSeconds() + 301)).toBe(false);

    const delivery = await deliveryIn(hook.id, "succeeded");
    expect(delivery).toMatchObject({
      event: "package.added",
      attempts: 1,
      request: { url: `${receiver.base}${request?.url}`, body: request?.body },
      response: { status: 204, error: null, durationMs: expect.any(Number) },
    });
    expect(request?.headers["x-wharf-delivery"]).toBe(String(delivery.id));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.received).toHaveLength(1);
    await call("DELETE", `/api/webhooks/${hook.id}`);
  });

  it("retries a failing receiver after 30 s, then 60 s, and delivers once it recovers", async () => {
    const hook = await createWebhook({
      name: "flaky",
      feed: "main",
      url: `${receiver.base}/flaky`,
      events: ["package.added"],
    });
    let failures = 2;
    receiver.answer = (_request, response) => {
      if (failures-- > 0) response.writeHead(503).end("down");
      else response.writeHead(200).end("ok");
    };
    await upload("main", "flaky", "1.0.0");
    const first = await deliveryIn(hook.id, "pending", 1);
    expect(first.response).toMatchObject({ status: 503, error: "The receiver answered 503." });
    expect(first.nextAttemptAt).toBe(new Date(time.clock.now().getTime() + 30_000).toISOString());
    time.advance(29_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.received).toHaveLength(1); // not due yet
    time.advance(1_000);
    const second = await deliveryIn(hook.id, "pending", 2);
    expect(second.nextAttemptAt).toBe(new Date(time.clock.now().getTime() + 60_000).toISOString());
    time.advance(60_000);
    const done = await deliveryIn(hook.id, "succeeded", 3);
    expect(done.response).toMatchObject({ status: 200, error: null });
    const bodies = new Set(receiver.received.map((r) => r.body));
    expect(bodies.size).toBe(1); // the same body each time
    const ids = new Set(receiver.received.map((r) => r.headers["x-wharf-delivery"]));
    expect(ids.size).toBe(1);
    await call("DELETE", `/api/webhooks/${hook.id}`);
  });

  it("gives up after WHARF_WEBHOOK_ATTEMPTS attempts: failed, with the last error", async () => {
    const hook = await createWebhook({
      name: "dead",
      feed: "main",
      url: `${receiver.base}/dead`,
      events: ["package.added"],
    });
    receiver.answer = (_request, response) => response.writeHead(500).end();
    await upload("main", "dead", "1.0.0");
    let waited = 30_000;
    for (let attempt = 1; attempt < 8; attempt++) {
      await deliveryIn(hook.id, "pending", attempt);
      time.advance(Math.min(waited, 3_600_000));
      waited *= 2;
    }
    const failed = await deliveryIn(hook.id, "failed", 8);
    expect(failed).toMatchObject({ nextAttemptAt: null, completedAt: expect.any(String), response: { status: 500 } });
    await call("DELETE", `/api/webhooks/${hook.id}`);
  });

  it("the test button sends a ping now and answers how it went (once, no retry)", async () => {
    const hook = await createWebhook({ name: "pinged", url: `${receiver.base}/ping` });
    const ok = await call("POST", `/api/webhooks/${hook.id}/test`);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({
      event: "ping",
      eventId: null,
      state: "succeeded",
      attempts: 1,
      response: { status: 204 },
    });
    expect(receiver.received.at(-1)?.headers["x-wharf-event"]).toBe("ping");
    expect(
      verifySignature(
        receiver.received.at(-1)?.headers["x-wharf-signature"] as string,
        receiver.received.at(-1)?.body ?? "",
        hook.secret,
        nowSeconds(),
      ),
    ).toBe(true);

    receiver.answer = (_request, response) => response.writeHead(302, { location: "http://169.254.169.254/" }).end();
    const redirected = (await call("POST", `/api/webhooks/${hook.id}/test`)).json() as Record<string, unknown>;
    expect(redirected).toMatchObject({ state: "failed", attempts: 1, response: { status: 302 } });
    expect(String((redirected.response as { error: string }).error)).toContain("not followed");
    await call("DELETE", `/api/webhooks/${hook.id}`);
  });

  it("a stored URL the guard refuses is refused at delivery too (link-local, metadata)", async () => {
    const hook = await createWebhook({ name: "moved", url: `${receiver.base}/ok` });
    for (const url of ["http://169.254.169.254/latest/meta-data", "http://metadata.google.internal/x"]) {
      // As an older Wharf, or a hand-edited database, could have stored it.
      await execute(t.database, "UPDATE webhooks SET url_template = ? WHERE id = ?", [url, hook.id]);
      const res = (await call("POST", `/api/webhooks/${hook.id}/test`)).json() as Record<string, unknown>;
      expect(res).toMatchObject({ state: "failed", response: { status: null } });
      expect(String((res.response as { error: string }).error)).toMatch(/never allowed/);
    }
    await call("DELETE", `/api/webhooks/${hook.id}`);
  });

  it("refuses bad input with a clear 400, never a 500", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: `${receiver.base}/x` }, "WEBHOOK_NAME_INVALID"],
      [{ name: "x" }, "WEBHOOK_URL_INVALID"],
      [{ name: "x", url: "ftp://example.com/" }, "WEBHOOK_URL_INVALID"],
      [{ name: "x", url: "http://{feed}.example.com/" }, "WEBHOOK_URL_INVALID"],
      [{ name: "x", url: "http://example.com/{nope}" }, "WEBHOOK_URL_INVALID"],
      [{ name: "x", url: "http://example.com/{name" }, "WEBHOOK_URL_INVALID"],
      [{ name: "x", url: "http://user:pw@example.com/" }, "FETCH_CREDENTIALS_REFUSED"],
      [{ name: "x", url: "http://169.254.169.254/latest" }, "WEBHOOK_URL_REFUSED"],
      [{ name: "x", url: "http://[fe80::1]/" }, "WEBHOOK_URL_REFUSED"],
      [{ name: "x", url: "http://metadata.google.internal/" }, "WEBHOOK_URL_REFUSED"],
      [{ name: "x", url: `${receiver.base}/x`, events: ["package.eaten"] }, "WEBHOOK_EVENTS_INVALID"],
      [{ name: "x", url: `${receiver.base}/x`, events: [] }, "WEBHOOK_EVENTS_INVALID"],
      [{ name: "x", url: `${receiver.base}/x`, method: "GET" }, "WEBHOOK_METHOD_INVALID"],
      [{ name: "x", url: `${receiver.base}/x`, headers: { Host: "evil" } }, "WEBHOOK_HEADER_REFUSED"],
      [{ name: "x", url: `${receiver.base}/x`, headers: { "Content-Length": "1" } }, "WEBHOOK_HEADER_REFUSED"],
      [{ name: "x", url: `${receiver.base}/x`, headers: { Connection: "close" } }, "WEBHOOK_HEADER_REFUSED"],
      [
        { name: "x", url: `${receiver.base}/x`, headers: { "X-Wharf-Signature": "t=1,v1=0" } },
        "WEBHOOK_HEADER_REFUSED",
      ],
      [{ name: "x", url: `${receiver.base}/x`, headers: { "X-A": "one\r\nX-B: two" } }, "WEBHOOK_HEADER_REFUSED"],
      [{ name: "x", url: `${receiver.base}/x`, headers: { "Bad Name": "v" } }, "WEBHOOK_HEADER_REFUSED"],
      [{ name: "x", url: `${receiver.base}/x`, headers: { "X-A": 5 } }, "WEBHOOK_HEADER_REFUSED"],
      [{ name: "x", url: `${receiver.base}/x`, secret: "short" }, "WEBHOOK_SECRET_INVALID"],
      [{ name: "x", url: `${receiver.base}/x`, events: "package.added" }, "INVALID_REQUEST"],
    ];
    for (const [body, code] of cases) {
      const res = await call("POST", "/api/webhooks", body);
      expect(res.statusCode, `${JSON.stringify(body)}: ${res.body}`).toBe(400);
      expect(res.headers["x-wharf-error"], JSON.stringify(body)).toBe(code);
    }
    expect(
      (await call("POST", "/api/webhooks", { name: "x", url: `${receiver.base}/x`, feed: "nope" })).statusCode,
    ).toBe(404);
    const text = await t.app.inject({
      method: "POST",
      url: "/api/webhooks",
      headers: { ...admin(), "content-type": "text/plain" },
      payload: "hi",
    });
    expect(text.statusCode).toBe(415);
    expect((await call("GET", "/api/webhooks/abc")).statusCode).toBe(400);
    expect((await call("GET", "/api/webhooks/999999")).statusCode).toBe(404);
    expect((await call("POST", "/api/webhooks/999999/test")).statusCode).toBe(404);
    expect((await readOne<{ n: number }>(t.database, "SELECT count(*) AS n FROM webhooks"))?.n).toBe(0);
  });

  it("update changes what is given, keeps the rest, replaces the secret, never moves the webhook to another feed", async () => {
    const hook = await createWebhook({
      name: "edited",
      feed: "main",
      url: `${receiver.base}/a`,
      headers: { "X-A": "1" },
    });
    // Signed with the first secret (which the worker then keeps opened) ...
    await call("POST", `/api/webhooks/${hook.id}/test`);
    const first = receiver.received.at(-1);
    expect(
      verifySignature(first?.headers["x-wharf-signature"] as string, first?.body ?? "", hook.secret, nowSeconds()),
    ).toBe(true);
    const changed = await call("PATCH", `/api/webhooks/${hook.id}`, {
      url: `${receiver.base}/b`,
      active: false,
      secret: "another-secret-0123456789",
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({
      name: "edited",
      feed: "main",
      url: `${receiver.base}/b`,
      active: false,
      headers: { "X-A": "1" },
    });
    expect(changed.body).not.toContain("another-secret");
    const moved = await call("PUT", `/api/webhooks/${hook.id}`, { feed: "other" });
    expect(moved.statusCode).toBe(400);
    expect(moved.headers["x-wharf-error"]).toBe("WEBHOOK_FEED_FIXED");
    await call("PATCH", `/api/webhooks/${hook.id}`, { active: true });
    // ... and with the new one once it is replaced.
    await call("POST", `/api/webhooks/${hook.id}/test`);
    const ping = receiver.received.at(-1);
    expect(
      verifySignature(
        ping?.headers["x-wharf-signature"] as string,
        ping?.body ?? "",
        "another-secret-0123456789",
        nowSeconds(),
      ),
    ).toBe(true);
    await call("DELETE", `/api/webhooks/${hook.id}`);
  });

  it("release status changes reach global webhooks that name them, never a feed's", async () => {
    const global = await createWebhook({
      name: "releases",
      url: `${receiver.base}/r/{event}`,
      events: ["release.status"],
    });
    const feeds = await createWebhook({
      name: "main only",
      feed: "main",
      url: `${receiver.base}/f`,
      events: ["release.status"],
    });
    const releases = releasesFixtures(t);
    const applicationId = await releases.setup("shop");
    await releases.release(applicationId, "1.0", "shop-pipeline");
    const [request] = await receiver.waitFor(1);
    expect(request?.url).toBe("/r/release.status");
    expect(JSON.parse(request?.body ?? "{}")).toMatchObject({
      event: "release.status",
      feed: null,
      package: null,
      data: { application: "shop", release: "1.0", status: "active", previousStatus: null },
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.received.map((r) => r.url)).toEqual(["/r/release.status"]);
    await call("DELETE", `/api/webhooks/${global.id}`);
    await call("DELETE", `/api/webhooks/${feeds.id}`);
  });

  it("a deleted feed's webhooks go with it", async () => {
    await createUpackFixtures(t).createFeed("brief");
    const hook = await createWebhook({ name: "brief", feed: "brief", url: `${receiver.base}/x` });
    const removed = await call("DELETE", "/api/management/feeds/delete/brief");
    expect(removed.statusCode).toBe(200);
    expect((await call("GET", `/api/webhooks/${hook.id}`)).statusCode).toBe(404);
  });
});
