import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";
import { type Receiver, startReceiver, verifySignature } from "../helpers/webhook-receiver.js";

/**
 * Issue 17's parts together, as a release manager meets them: builds uploaded to a CI feed, one
 * promoted to the release feed, the CI feed's retention purging the oldest; a global webhook hears
 * each of those as its own signed event, and the audit log has a record of every request that
 * changed something.
 */

let t: TestApp;
let receiver: Receiver;
const admin = () => ({ "x-apikey": t.adminKey });

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_FETCH_ALLOW_PRIVATE: "true", WHARF_WEBHOOK_POLL_SECONDS: "0.05" } });
  receiver = await startReceiver();
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("ci");
  await fixtures.createFeed("release");
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const json = async (method: "GET" | "POST", url: string, payload?: object) => {
  const res = await t.app.inject({ method, url, headers: admin(), ...(payload === undefined ? {} : { payload }) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBeLessThan(300);
  return res.json() as Record<string, unknown>;
};

async function upload(version: string) {
  const res = await t.app.inject({
    method: "PUT",
    url: "/upack/ci/upload",
    headers: admin(),
    payload: await buildUpack({ group: "acme", name: "app", version }),
  });
  expect(res.statusCode, res.body).toBe(201);
  return String(res.headers["x-request-id"]);
}

interface EventBody {
  event: string;
  feed: { name: string } | null;
  package: { group: string; name: string; version: string } | null;
  actor: string;
  data: Record<string, unknown>;
}

describe("the package lifecycle end to end", () => {
  it("upload, promote and purge: three kinds of signed events, and an audit record of each request", async () => {
    const hook = await json("POST", "/api/webhooks", {
      name: "everything",
      url: `${receiver.base}/wharf`,
      events: ["package.added", "package.promoted", "package.deleted", "package.purged"],
    });
    const secret = String(hook.secret);

    const uploads = [await upload("1.0.0"), await upload("1.1.0"), await upload("1.2.0")];
    await json("POST", "/api/promotions/promote", {
      fromFeed: "ci",
      toFeed: "release",
      group: "acme",
      name: "app",
      version: "1.1.0",
      comments: "QA passed",
    });
    // Keep the newest build; versions deployed recently would stay, none is.
    await json("POST", "/api/management/feeds/update/ci", {
      retentionRules: [{ keepVersionsCount: 1, keepDeployedWithinDays: 0 }],
    });
    const preview = await json("POST", "/api/retention/preview?feed=ci");
    const planned = (preview.items as { version: string }[]).map((item) => item.version).sort();
    expect(planned).toEqual(["1.0.0", "1.1.0"]);
    const started = await json("POST", "/api/retention/run?feed=ci", { token: preview.token });
    let run: Record<string, unknown> = started;
    for (let i = 0; i < 200 && (run.status === "pending" || run.status === "executing"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      run = await json("GET", `/api/retention/runs/${String(started.id)}?feed=ci`);
    }
    expect(run).toMatchObject({ status: "succeeded", versionsDeleted: 2, versionsSkipped: 0 });
    const left = (await json("GET", "/upack/ci/packages?group=acme&name=app")) as { versions: string[] };
    expect(left.versions).toEqual(["1.2.0"]);
    // The promoted copy in the release feed is not the CI feed's to purge.
    expect(
      (await t.app.inject({ method: "GET", url: "/upack/release/download/acme/app/1.1.0", headers: admin() }))
        .statusCode,
    ).toBe(200);

    // 3 added, 1 promoted, 2 purged; none of the purges reported as a user's delete.
    const received = await receiver.waitFor(6);
    const nowSeconds = Math.floor(Date.now() / 1000);
    for (const request of received) {
      expect(verifySignature(request.headers["x-wharf-signature"] as string, request.body, secret, nowSeconds)).toBe(
        true,
      );
    }
    const events = received.map((request) => JSON.parse(request.body) as EventBody);
    const summary = events.map((e) => `${e.event} ${e.feed?.name} ${e.package?.version}`).sort();
    expect(summary).toEqual([
      "package.added ci 1.0.0",
      "package.added ci 1.1.0",
      "package.added ci 1.2.0",
      "package.promoted release 1.1.0",
      "package.purged ci 1.0.0",
      "package.purged ci 1.1.0",
    ]);
    const promoted = events.find((e) => e.event === "package.promoted");
    expect(promoted?.actor).toBe("Administrator (WHARF_ADMIN_API_KEY)");
    const purged = events.filter((e) => e.event === "package.purged");
    expect(purged.map((e) => e.data.requestedBy)).toEqual([
      "Administrator (WHARF_ADMIN_API_KEY)",
      "Administrator (WHARF_ADMIN_API_KEY)",
    ]);

    const audit = (await json("GET", "/api/audit?limit=1000")) as {
      records: { action: string; object: string; requestId: string; outcome: string }[];
    };
    const actions = audit.records.map((record) => `${record.action} ${record.object}`);
    expect(actions).toEqual(
      expect.arrayContaining([
        "POST /api/promotions/promote fromFeed=ci toFeed=release group=acme name=app version=1.1.0",
        "POST /api/retention/preview feed=ci",
        "POST /api/retention/run feed=ci",
        "POST /api/management/feeds/update/:name name=ci",
        "POST /api/webhooks name=everything",
      ]),
    );
    for (const requestId of uploads) {
      expect(audit.records.filter((record) => record.requestId === requestId)).toMatchObject([
        { action: "PUT /upack/:feed/upload", object: "feed=ci", outcome: "success" },
      ]);
    }
    // Reads leave no record.
    expect(actions.some((action) => action.startsWith("GET "))).toBe(false);
  });
});
