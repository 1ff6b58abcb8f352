import { randomBytes } from "node:crypto";
import type { LightMyRequestResponse } from "fastify";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Clock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { manualClock } from "../helpers/clock.js";
import { basic, createUser, grant, newKey } from "../helpers/fixtures.js";
import { expectText } from "../helpers/responses.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Guessing passwords and keys (issue 11, section 3): failures slow down the address they come
 * from and the user name they aim at, with 429 and Retry-After before any hash or key lookup;
 * unknown users cost a hash like known ones; hashing is bounded; all of it is counted in
 * /metrics. Whether a password was hashed is read from `wharf_auth_password_checks_total`, so
 * that nothing here depends on timing.
 */

const USERS = "/api/security/users/list";
const PASSWORD = "alice-password-1";
/** Where the metrics are read from: an address no test makes fail. */
const READER = "192.0.2.250";

interface Guessing {
  readonly t: TestApp;
  /** GET of an administrators' list from `address`: 200 for alice, 403 for a wrong credential. */
  get(headers: Record<string, string>, address: string): Promise<LightMyRequestResponse>;
  metric(series: string): Promise<number>;
}

const apps: TestApp[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(apps.splice(0).map((t) => t.close()));
});

/** The production defaults (config.test.ts checks them), which buildTestApp relaxes for other tests. */
const DEFAULTS = { WHARF_AUTH_ADDRESS_FAILURES: "10", WHARF_AUTH_USER_FREE_FAILURES: "5" };

async function guessing(env: Record<string, string> = {}, clock?: Clock): Promise<Guessing> {
  const t = await buildTestApp({ env: { ...DEFAULTS, ...env }, ...(clock ? { clock } : {}) });
  apps.push(t);
  await grant(t.database, {
    user: await createUser(t.database, "alice", PASSWORD),
    attributes: ["Admin_ConfigureProGet"],
  });
  await createUser(t.database, "passwordless");
  return {
    t,
    get: (headers, address) => t.app.inject({ method: "GET", url: USERS, headers, remoteAddress: address }),
    async metric(series) {
      const res = await t.app.inject({
        method: "GET",
        url: "/metrics",
        headers: { "x-apikey": t.adminKey },
        remoteAddress: READER,
      });
      expect(res.statusCode).toBe(200);
      const line = res.body.split("\n").find((l) => l.startsWith(`${series} `));
      return line === undefined ? 0 : Number(line.slice(series.length + 1));
    },
  };
}

const CHECKS = "wharf_auth_password_checks_total";

function expectThrottled(res: LightMyRequestResponse, whose: string, retryAfter: string): void {
  const settings = whose === "from this address" ? "WHARF_AUTH_ADDRESS_FAILURES" : "WHARF_AUTH_MAX_WAIT_SECONDS";
  expectText(res, 429, `Too many failed sign-ins ${whose}`, settings);
  expect(res.headers["retry-after"]).toBe(retryAfter);
  expect(res.headers["x-wharf-error"]).toBe("TOO_MANY_FAILED_SIGN_INS");
}

describe("guessing from one address", () => {
  it("refuses the address after its allowance of wrong passwords, before hashing, and keeps serving others", async () => {
    const g = await guessing({ WHARF_AUTH_ADDRESS_FAILURES: "3" });
    for (let i = 0; i < 3; i++) {
      // A different name each time: the address limit alone is at work here.
      expectText(await g.get(basic(`user${i}`, "guess"), "198.51.100.1"), 403);
    }
    expect(await g.metric(CHECKS)).toBe(3);
    // Even the right password: the address is refused unchecked.
    expectThrottled(await g.get(basic("alice", PASSWORD), "198.51.100.1"), "from this address", "60");
    expectThrottled(await g.get({ "x-apikey": g.t.adminKey }, "198.51.100.1"), "from this address", "60");
    expect(await g.metric(CHECKS)).toBe(3);
    expect((await g.get(basic("alice", PASSWORD), "198.51.100.2")).statusCode).toBe(200);
    expect((await g.get({ "x-apikey": g.t.adminKey }, "198.51.100.2")).statusCode).toBe(200);
    expect(await g.metric('wharf_auth_failures_total{method="password"}')).toBe(3);
    expect(await g.metric('wharf_auth_throttled_total{scope="address"}')).toBe(2);
  });

  it("throttles wrong API keys the same way, in every form a key takes, after ten by default", async () => {
    const g = await guessing();
    const forms = [
      (key: string) => ({ "x-apikey": key }),
      (key: string) => basic("api", key),
      (key: string) => ({ "x-proget-apikey": key }),
    ];
    for (let i = 0; i < 10; i++) {
      expectText(await g.get(forms[i % 3]?.(newKey("guess")) ?? {}, "198.51.100.1"), 403);
    }
    expectThrottled(await g.get({ "x-apikey": g.t.adminKey }, "198.51.100.1"), "from this address", "60");
    expect((await g.get({ "x-apikey": g.t.adminKey }, "198.51.100.2")).statusCode).toBe(200);
    expect(await g.metric('wharf_auth_failures_total{method="api_key"}')).toBe(10);
  });

  it("counts `X-ApiKey: user:password` as the Basic failures it stands for", async () => {
    const g = await guessing({ WHARF_AUTH_ADDRESS_FAILURES: "3" });
    expectText(await g.get(basic("bob", "guess-1"), "198.51.100.1"), 403);
    expectText(await g.get({ "x-apikey": "carol:guess-2" }, "198.51.100.1"), 403);
    expectText(await g.get({ "x-apikey": "erin:guess-3" }, "198.51.100.1"), 403);
    expectThrottled(await g.get({ "x-apikey": `alice:${PASSWORD}` }, "198.51.100.1"), "from this address", "60");
    expectThrottled(await g.get(basic("alice", PASSWORD), "198.51.100.1"), "from this address", "60");
    expect(await g.metric('wharf_auth_failures_total{method="password"}')).toBe(3);
    expect(await g.metric(CHECKS)).toBe(3);
  });

  it("lets the address sign in again once its wait is over", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const g = await guessing({ WHARF_AUTH_ADDRESS_FAILURES: "2" });
    expectText(await g.get(basic("bob", "guess"), "198.51.100.1"), 403);
    expectText(await g.get(basic("carol", "guess"), "198.51.100.1"), 403);
    expectThrottled(await g.get(basic("alice", PASSWORD), "198.51.100.1"), "from this address", "60");
    vi.setSystemTime(Date.now() + 59_000);
    expectThrottled(await g.get(basic("alice", PASSWORD), "198.51.100.1"), "from this address", "1");
    vi.setSystemTime(Date.now() + 1_000);
    expect((await g.get(basic("alice", PASSWORD), "198.51.100.1")).statusCode).toBe(200);
  });

  it("believes X-Forwarded-For only from a proxy the operator named", async () => {
    const direct = await guessing({ WHARF_AUTH_ADDRESS_FAILURES: "2" });
    for (const client of ["203.0.113.1", "203.0.113.2"]) {
      expectText(await direct.get({ ...basic("bob", "guess"), "x-forwarded-for": client }, "198.51.100.1"), 403);
    }
    const forged = { ...basic("alice", PASSWORD), "x-forwarded-for": "203.0.113.3" };
    expectThrottled(await direct.get(forged, "198.51.100.1"), "from this address", "60");

    const proxied = await guessing({ WHARF_AUTH_ADDRESS_FAILURES: "2", WHARF_TRUST_PROXY: "198.51.100.0/24" });
    const via = (client: string, headers: Record<string, string>) =>
      proxied.get({ ...headers, "x-forwarded-for": client }, "198.51.100.1");
    expectText(await via("203.0.113.1", basic("bob", "guess")), 403);
    expectText(await via("203.0.113.1", basic("carol", "guess")), 403);
    expectThrottled(await via("203.0.113.1", basic("alice", PASSWORD)), "from this address", "60");
    expect((await via("203.0.113.2", basic("alice", PASSWORD))).statusCode).toBe(200);
  });
});

describe("guessing one user's password", () => {
  it("makes a user name wait after its free failures, known or not alike, and lets the password in after the wait", async () => {
    const time = manualClock();
    const g = await guessing({ WHARF_AUTH_USER_FREE_FAILURES: "1" }, time.clock);
    let address = 0;
    const from = () => `198.51.100.${++address}`; // a new address each time: only the name is counted
    const answers = async (name: string, password: string) => {
      const res = await g.get(basic(name, password), from());
      return [res.statusCode, res.headers["retry-after"] ?? null] as const;
    };
    async function story(name: string, password: string) {
      const seen = [await answers(name, "guess-1")];
      const pseudo = await g.get({ "x-apikey": `${name}:guess-2` }, from());
      seen.push([pseudo.statusCode, null], await answers(name, password)); // the second failure starts a 1 s wait
      time.advance(1_000);
      seen.push(await answers(name, "guess-3"), await answers(name, password)); // now 2 s
      time.advance(2_000);
      seen.push(await answers(name, password));
      return seen;
    }
    const checksBefore = await g.metric(CHECKS);
    const known = await story("alice", PASSWORD);
    const unknown = await story("ghost", PASSWORD);
    expect(known.slice(0, -1)).toEqual([
      [403, null],
      [403, null],
      [429, "1"],
      [403, null],
      [429, "2"],
    ]);
    expect(known.at(-1)).toEqual([200, null]);
    // An unknown name goes through the very same answers: waiting tells nobody which names exist.
    expect(unknown).toEqual([...known.slice(0, -1), [403, null]]);
    // Waiting attempts were not hashed: 4 checked per name (3 wrong, 1 after the last wait).
    expect((await g.metric(CHECKS)) - checksBefore).toBe(8);
    expect(await g.metric('wharf_auth_throttled_total{scope="user"}')).toBe(4);
    expectThrottled(await g.get(basic("ghost", "guess-4"), from()), "for this user name", "4");
  });

  it("never makes an address the user signed in from wait for the name", async () => {
    const time = manualClock();
    const g = await guessing({ WHARF_AUTH_USER_FREE_FAILURES: "0" }, time.clock);
    expect((await g.get(basic("alice", PASSWORD), "198.51.100.1")).statusCode).toBe(200);
    expectText(await g.get(basic("alice", "guess"), "203.0.113.1"), 403);
    expectThrottled(await g.get(basic("alice", PASSWORD), "203.0.113.2"), "for this user name", "1");
    expect((await g.get(basic("alice", PASSWORD), "198.51.100.1")).statusCode).toBe(200);
    expect((await g.get({ "x-apikey": `alice:${PASSWORD}` }, "198.51.100.1")).statusCode).toBe(200);
  });
});

describe("the cost of a sign-in", () => {
  it("hashes the password of an unknown user, or of a user without one, as it does a wrong one", async () => {
    const g = await guessing();
    const attempts = [
      basic("alice", "wrong-password"),
      basic("nobody", "wrong-password"),
      { "x-apikey": "nobody:wrong-password" },
      basic("passwordless", "wrong-password"),
    ];
    const bodies = new Set<string>();
    for (const [index, headers] of attempts.entries()) {
      const before = await g.metric(CHECKS);
      bodies.add(expectText(await g.get(headers, `198.51.100.${index + 1}`), 403));
      expect(await g.metric(CHECKS), JSON.stringify(headers)).toBe(before + 1);
    }
    expect(bodies.size).toBe(1);
  });

  it("hashes a bounded number of passwords at once and answers the rest 503 with Retry-After", async () => {
    const g = await guessing({ WHARF_AUTH_PASSWORD_CHECKS: "1" });
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => g.get(basic(`user${i}`, "guess"), `198.51.100.${i + 1}`)),
    );
    const busy = answers.filter((res) => res.statusCode === 503);
    const refused = answers.filter((res) => res.statusCode === 403);
    expect(busy.length + refused.length).toBe(24);
    // One hashing and eight waiting at most: the rest were answered at once.
    expect(busy.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThanOrEqual(9);
    for (const res of busy) {
      expectText(res, 503, "Too many sign-ins are being checked at once", "WHARF_AUTH_PASSWORD_CHECKS");
      expect(res.headers["retry-after"]).toBe("1");
    }
    expect(await g.metric('wharf_auth_throttled_total{scope="hashing"}')).toBe(busy.length);
    // Refused for load, not for a wrong password: no failure counted.
    expect(await g.metric('wharf_auth_failures_total{method="password"}')).toBe(refused.length);
  });

  it("logs each failure as a warning with who and where, never the password or the key", async () => {
    const lines: string[] = [];
    const t = await buildTestApp({
      logger: { level: "warn", stream: { write: (line: string) => void lines.push(line) } },
    });
    apps.push(t);
    const secretPassword = `password-${randomBytes(8).toString("hex")}`;
    const secretKey = newKey("secret");
    await t.app.inject({
      method: "GET",
      url: USERS,
      headers: basic("mallory", secretPassword),
      remoteAddress: "198.51.100.7",
    });
    await t.app.inject({
      method: "GET",
      url: USERS,
      headers: { "x-apikey": secretKey },
      remoteAddress: "198.51.100.8",
    });
    const failures = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((l) => l.msg === "failed sign-in");
    expect(failures).toEqual([
      expect.objectContaining({ level: 40, method: "password", user: "mallory", ip: "198.51.100.7" }),
      expect.objectContaining({ level: 40, method: "api_key", ip: "198.51.100.8" }),
    ]);
    expect(lines.join("\n")).not.toContain(secretPassword);
    expect(lines.join("\n")).not.toContain(secretKey);
  });
});

describe("replayed downloads", () => {
  it("are not served to an address that must wait, even with a password that would be right", async () => {
    const t = await buildTestApp({ env: { WHARF_AUTH_ADDRESS_FAILURES: "3", WHARF_TRUST_PROXY: "127.0.0.1" } });
    apps.push(t);
    const u = createUpackFixtures(t);
    await u.createFeed("main");
    await grant(t.database, {
      user: await createUser(t.database, "dev", "dev-password-1"),
      attributes: ["Feeds_DownloadPackage"],
    });
    const base = await t.app.listen({ port: 0, host: "127.0.0.1" });
    const send = (path: string, headers: Record<string, string>, client: string, init: RequestInit = {}) =>
      fetch(`${base}${path}`, { ...init, headers: { ...headers, "x-forwarded-for": client } });
    const upload = await send(
      "/upack/main/upload",
      { "x-apikey": t.adminKey, "content-type": "application/octet-stream" },
      READER,
      {
        method: "PUT",
        body: new Uint8Array(await buildUpack({ name: "lib", version: "1.0.0", files: { "a.txt": "A" } })),
      },
    );
    expect(upload.status).toBe(201);
    const replays = async () => {
      const text = await (await send("/metrics", { "x-apikey": t.adminKey }, READER)).text();
      const line = text.split("\n").find((l) => l.startsWith("wharf_http_replayed_responses_total{"));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
    };
    const download = async (password: string, client: string) => {
      const res = await send("/upack/main/download/lib/1.0.0", basic("dev", password), client);
      await res.arrayBuffer();
      return res;
    };
    // The first download is kept, the second replayed (on a cluster node too: the upload's own
    // notification, arriving after its commit was counted, leaves the kept entry alone).
    for (let i = 0; i < 2; i++) expect((await download("dev-password-1", "203.0.113.1")).status).toBe(200);
    const before = await replays();
    expect(before).toBe(1);
    for (const guess of ["guess-1", "guess-2", "guess-3"])
      expect((await download(guess, "203.0.113.66")).status).toBe(403);
    const refused = await download("dev-password-1", "203.0.113.66");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(await replays()).toBe(before);
    expect((await download("dev-password-1", "203.0.113.1")).status).toBe(200);
    expect(await replays()).toBe(before + 1);
  });
});
