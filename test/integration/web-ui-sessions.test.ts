import { randomBytes } from "node:crypto";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Clock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { manualClock } from "../helpers/clock.js";
import { basic, createUser, execute, grant, readAll, readOne } from "../helpers/fixtures.js";

/**
 * The web UI's sessions (issue 16, section 2; attack tests of section 3): sign-in and sign-out,
 * the session cookie and its expiry, CSRF tokens bound to the session, the cookie refused by the
 * machine APIs, throttled and uniform failures, security headers, and no secret in the logs.
 */

const PASSWORD = "alice-password-1";
const SIGNED_IN = /Signed in as <strong>alice<\/strong>/;

/** How many UI sessions the app's database holds. */
async function sessionCount(t: TestApp): Promise<number | undefined> {
  return (await readOne<{ n: number }>(t.database, "SELECT COUNT(*) AS n FROM ui_sessions"))?.n;
}

/** A browser: the cookies it holds, sent back on every request (Path ignored: tests use "/" and "/sign-in"). */
class Browser {
  readonly cookies = new Map<string, string>();
  constructor(
    private readonly t: TestApp,
    readonly address = "198.51.100.10",
  ) {}

  async request(options: {
    method?: "GET" | "POST";
    url: string;
    form?: Record<string, string>;
    headers?: Record<string, string>;
  }): Promise<LightMyRequestResponse> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const res = await this.t.app.inject({
      method: options.method ?? "GET",
      url: options.url,
      remoteAddress: this.address,
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(options.form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
        ...options.headers,
      },
      ...(options.form ? { payload: new URLSearchParams(options.form).toString() } : {}),
    });
    for (const set of res.cookies) {
      const cleared = set.value === "" || set.maxAge === 0 || (set.expires !== undefined && set.expires.getTime() < 1);
      if (cleared) this.cookies.delete(set.name);
      else this.cookies.set(set.name, set.value);
    }
    return res;
  }

  /** The sign-in form's CSRF token (and, as a browser would, its cookie). */
  async signInToken(): Promise<string> {
    const res = await this.request({ url: "/sign-in" });
    expect(res.statusCode).toBe(200);
    return tokenIn(res.body, "/sign-in");
  }

  async signIn(user = "alice", password = PASSWORD, next?: string): Promise<LightMyRequestResponse> {
    const _csrf = await this.signInToken();
    return this.request({
      method: "POST",
      url: "/sign-in",
      form: { _csrf, user, password, ...(next === undefined ? {} : { next }) },
    });
  }

  /** Whether the UI sees this browser signed in as alice (the header of a page says so). */
  async isSignedIn(): Promise<boolean> {
    const res = await this.request({ url: "/sign-in" });
    return SIGNED_IN.test(res.body);
  }
}

/** The CSRF token of the page's form posting to `action` (the header's sign-out form, by default). */
function tokenIn(html: string, action = "/sign-out"): string {
  const match = new RegExp(`action="${action}">\\s*<input type="hidden" name="_csrf" value="([^"]+)"`).exec(html);
  expect(match, "a CSRF token in the page").not.toBeNull();
  return match?.[1] ?? "";
}

async function app(env: Record<string, string> = {}, clock?: Clock, logLines?: string[]) {
  const t = await buildTestApp({
    env,
    ...(clock ? { clock } : {}),
    ...(logLines ? { logger: { level: "info", stream: { write: (line: string) => void logLines.push(line) } } } : {}),
  });
  const alice = await createUser(t.database, "alice", PASSWORD);
  await grant(t.database, { user: alice, attributes: ["Admin_ConfigureProGet", "Feeds_ViewFeed"] });
  return { t, alice };
}

describe("signing in and out", () => {
  let t: TestApp;
  beforeAll(async () => {
    ({ t } = await app());
  });
  afterAll(() => t.close());

  it("shows a labelled form, signs in with a new HttpOnly Lax cookie, and signs out", async () => {
    const browser = new Browser(t);
    const form = await browser.request({ url: "/sign-in?next=/feeds/main" });
    expect(form.statusCode).toBe(200);
    expect(form.headers["content-type"]).toContain("text/html");
    expect(form.body).toContain('<label for="sign-in-user">User name</label>');
    expect(form.body).toContain('autocomplete="username"');
    expect(form.body).toContain('autocomplete="current-password"');
    expect(form.body).toContain('name="next" value="/feeds/main"');
    const signInCookie = form.cookies.find((c) => c.name === "wharf_sign_in");
    expect(signInCookie).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/sign-in" });

    const res = await browser.request({
      method: "POST",
      url: "/sign-in",
      form: { _csrf: tokenIn(form.body, "/sign-in"), user: "alice", password: PASSWORD, next: "/feeds/main" },
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/feeds/main");
    const session = res.cookies.find((c) => c.name === "wharf_session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/", maxAge: 168 * 3600 });
    expect(session?.secure).toBeFalsy();
    expect(session?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Only the token's hash is stored.
    const stored = await readAll<{ token_hash: Buffer; address: string }>(
      t.database,
      "SELECT token_hash, address, user_agent FROM ui_sessions",
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]?.token_hash.length).toBe(32);
    expect(stored[0]?.address).toBe(browser.address);
    expect(JSON.stringify(await readAll(t.database, "SELECT * FROM ui_sessions"))).not.toContain(session?.value);

    expect(await browser.isSignedIn()).toBe(true);
    const page = await browser.request({ url: "/sign-in" });
    const out = await browser.request({ method: "POST", url: "/sign-out", form: { _csrf: tokenIn(page.body) } });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe("/feeds");
    expect(out.cookies.find((c) => c.name === "wharf_session")?.value).toBe("");
    expect(await sessionCount(t)).toBe(0);
    // The old cookie, kept by a careless browser, no longer signs anyone in.
    browser.cookies.set("wharf_session", session?.value ?? "");
    expect(await browser.isSignedIn()).toBe(false);
  });

  it("marks the cookie Secure when the browser came over HTTPS (a proxy's X-Forwarded-Proto)", async () => {
    const browser = new Browser(t);
    const _csrf = await browser.signInToken();
    const res = await browser.request({
      method: "POST",
      url: "/sign-in",
      form: { _csrf, user: "alice", password: PASSWORD },
      headers: { "x-forwarded-proto": "https" },
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/feeds");
    expect(res.cookies.find((c) => c.name === "wharf_session")?.secure).toBe(true);
  });

  it("answers a wrong password and an unknown user alike, each after a password hash", async () => {
    const checks = async () => {
      const res = await t.app.inject({ url: "/metrics", headers: { "x-apikey": t.adminKey } });
      const line = res.body.split("\n").find((l) => l.startsWith("wharf_auth_password_checks_total "));
      return Number(line?.split(" ")[1] ?? 0);
    };
    const attempt = async (user: string) => {
      const before = await checks();
      const res = await new Browser(t, "198.51.100.20").signIn(user, "not-the-password");
      expect(await checks()).toBe(before + 1);
      return res;
    };
    const wrongPassword = await attempt("alice");
    const unknownUser = await attempt("nobody");
    const normalised = (res: LightMyRequestResponse, user: string) => ({
      status: res.statusCode,
      body: res.body.replace(/name="_csrf" value="[^"]+"/g, "").replaceAll(`value="${user}"`, 'value="USER"'),
      sessions: res.cookies.filter((c) => c.name === "wharf_session"),
    });
    expect(wrongPassword.statusCode).toBe(401);
    expect(wrongPassword.body).toContain("The user name or password is not correct.");
    expect(normalised(unknownUser, "nobody")).toEqual(normalised(wrongPassword, "alice"));
  });

  it("refuses a sign-in post without the sign-in form's token (login CSRF)", async () => {
    const res = await new Browser(t).request({
      method: "POST",
      url: "/sign-in",
      form: { user: "alice", password: PASSWORD },
    });
    expect(res.statusCode).toBe(403);
    expect(res.cookies.find((c) => c.name === "wharf_session")).toBeUndefined();
    // A token from another browser's form does not go with this browser's cookie either.
    const other = await new Browser(t).signInToken();
    const mine = new Browser(t);
    await mine.signInToken();
    const crossed = await mine.request({
      method: "POST",
      url: "/sign-in",
      form: { _csrf: other, user: "alice", password: PASSWORD },
    });
    expect(crossed.statusCode).toBe(403);
  });

  it("never keeps a session cookie the browser came with (session fixation)", async () => {
    const browser = new Browser(t);
    browser.cookies.set("wharf_session", "attacker-chosen-value");
    await browser.signIn();
    expect(browser.cookies.get("wharf_session")).not.toBe("attacker-chosen-value");
    // Signing in again over a live session replaces it: the first token dies.
    const first = browser.cookies.get("wharf_session") ?? "";
    await browser.signIn();
    const second = browser.cookies.get("wharf_session") ?? "";
    expect(second).not.toBe(first);
    expect(await browser.isSignedIn()).toBe(true);
    browser.cookies.set("wharf_session", first);
    expect(await browser.isSignedIn()).toBe(false);
  });

  it.each([
    ["//evil.example/x", "/feeds"],
    ["/\\evil.example", "/feeds"],
    ["/\t/evil.example", "/feeds"],
    ["https://evil.example/", "/feeds"],
    ["javascript:alert(1)", "/feeds"],
    ["/feeds/main?sort=name", "/feeds/main?sort=name"],
  ])("sends `next` %j to %j (no open redirect)", async (next, location) => {
    const res = await new Browser(t).signIn("alice", PASSWORD, next);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(location);
  });

  it("refuses a forged sign-out without the session's token, and the session stays", async () => {
    const victim = new Browser(t);
    await victim.signIn();
    const forged = await victim.request({ method: "POST", url: "/sign-out", form: {} });
    expect(forged.statusCode).toBe(403);
    expect(forged.cookies.find((c) => c.name === "wharf_session")).toBeUndefined();
    // A token of another session (the attacker's own) is no better.
    const attacker = new Browser(t, "198.51.100.66");
    await attacker.signIn();
    const attackerToken = tokenIn((await attacker.request({ url: "/sign-in" })).body);
    const crossed = await victim.request({ method: "POST", url: "/sign-out", form: { _csrf: attackerToken } });
    expect(crossed.statusCode).toBe(403);
    expect(await victim.isSignedIn()).toBe(true);
    // The token in the header works as well as in the form.
    const token = tokenIn((await victim.request({ url: "/sign-in" })).body);
    const out = await victim.request({ method: "POST", url: "/sign-out", headers: { "x-csrf-token": token } });
    expect(out.statusCode).toBe(303);
    expect(await victim.isSignedIn()).toBe(false);
  });

  it("never authenticates a machine API by the cookie", async () => {
    const browser = new Browser(t);
    await browser.signIn();
    expect(await browser.isSignedIn()).toBe(true);
    const users = await browser.request({ url: "/api/security/users/list" });
    expect(users.statusCode).toBe(401);
    const upack = await browser.request({ url: "/upack/no-such-feed/versions" });
    expect(upack.statusCode).toBe(401);
    const post = await browser.request({
      method: "POST",
      url: "/api/security/users/delete?user=alice",
      headers: { "content-type": "application/json" },
    });
    expect(post.statusCode).toBe(401);
    // The same requests with alice's own credentials pass: the cookie was the only thing missing.
    const withPassword = await t.app.inject({ url: "/api/security/users/list", headers: basic("alice", PASSWORD) });
    expect(withPassword.statusCode).toBe(200);
    const upackWithPassword = await t.app.inject({
      url: "/upack/no-such-feed/versions",
      headers: basic("alice", PASSWORD),
    });
    expect(upackWithPassword.statusCode).toBe(404);
  });

  it("sends strict security headers with pages, not with the APIs' answers", async () => {
    const res = await new Browser(t).request({ url: "/sign-in" });
    const csp = String(res.headers["content-security-policy"]);
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["referrer-policy"]).toBe("same-origin");
    expect(res.headers["x-frame-options"]).toBe("DENY");
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)/);
    const api = await t.app.inject({ url: "/api/security/users/list", headers: { "x-apikey": t.adminKey } });
    expect(api.headers["content-security-policy"]).toBeUndefined();
  });
});

describe("sessions that end", () => {
  it("end after the idle time and, however used, at the absolute expiry", async () => {
    const time = manualClock();
    const { t } = await app({ WHARF_UI_SESSION_IDLE_MINUTES: "10", WHARF_UI_SESSION_HOURS: "1" }, time.clock);
    try {
      const idle = new Browser(t);
      await idle.signIn();
      const busy = new Browser(t, "198.51.100.11");
      await busy.signIn();
      expect(busy.cookies.get("wharf_session")).toBeDefined();
      const lastSeen = async () =>
        (await readAll<{ last_seen_at: string }>(t.database, "SELECT last_seen_at FROM ui_sessions ORDER BY id")).map(
          (row) => row.last_seen_at,
        );
      const signedInAt = time.at();
      // Used within the idle time: kept, and its last use recorded (at most once a minute).
      time.advance(9 * 60_000);
      expect(await busy.isSignedIn()).toBe(true);
      expect(await lastSeen()).toEqual([signedInAt, time.at()]);
      const seen = time.at();
      time.advance(30_000);
      expect(await busy.isSignedIn()).toBe(true);
      expect(await lastSeen()).toEqual([signedInAt, seen]); // not written again within the minute
      // The idle browser's 10 minutes are up; the busy one goes on.
      time.advance(60_000);
      expect(await idle.isSignedIn()).toBe(false);
      expect(await busy.isSignedIn()).toBe(true);
      for (let minutes = 10.5 + 8; minutes < 60; minutes += 8) {
        time.advance(8 * 60_000);
        expect(await busy.isSignedIn()).toBe(true);
      }
      // An hour after signing in (last used 1.5 minutes ago): over.
      time.advance(1.5 * 60_000);
      expect(time.at()).toBe(new Date(Date.parse(signedInAt) + 3_600_000).toISOString());
      expect(await busy.isSignedIn()).toBe(false);
      expect(await sessionCount(t)).toBe(0);
    } finally {
      await t.close();
    }
  });

  it("end when their user is deleted or their password changes", async () => {
    const { t } = await app();
    try {
      const browser = new Browser(t);
      await browser.signIn();
      expect(await browser.isSignedIn()).toBe(true);
      await execute(t.database, "UPDATE users SET password_hash = password_hash || 'x' WHERE name = 'alice'", []);
      expect(await browser.isSignedIn()).toBe(false);
      await execute(
        t.database,
        "UPDATE users SET password_hash = substr(password_hash, 1, length(password_hash) - 1)",
        [],
      );

      await browser.signIn();
      expect(await browser.isSignedIn()).toBe(true);
      const deleted = await t.app.inject({
        method: "POST",
        url: "/api/security/users/delete?user=alice",
        headers: { "x-apikey": t.adminKey },
      });
      expect(deleted.statusCode).toBe(200);
      expect(await browser.isSignedIn()).toBe(false);
      expect(await sessionCount(t)).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe("guessing through the sign-in form", () => {
  it("is slowed per user name and per address, with a 429 page and Retry-After", async () => {
    const time = manualClock();
    const { t } = await app({ WHARF_AUTH_USER_FREE_FAILURES: "2", WHARF_AUTH_ADDRESS_FAILURES: "4" }, time.clock);
    try {
      const guesser = new Browser(t, "198.51.100.30");
      for (let i = 0; i < 2; i++) expect((await guesser.signIn("alice", `guess-${i}`)).statusCode).toBe(401);
      // The third failure at the name makes it wait: the next try is refused unchecked.
      expect((await guesser.signIn("alice", "guess-2")).statusCode).toBe(401);
      const userWait = await guesser.signIn("alice", PASSWORD);
      expect(userWait.statusCode).toBe(429);
      expect(userWait.headers["retry-after"]).toBe("1");
      expect(userWait.headers["content-type"]).toContain("text/html");
      expect(userWait.body).toContain("Too many failed sign-ins for this user name");
      expect(userWait.cookies.find((c) => c.name === "wharf_session")).toBeUndefined();
      // The address: four failures at any names, then every name is refused from there.
      expect((await guesser.signIn("bob", "guess")).statusCode).toBe(401);
      const addressWait = await guesser.signIn("carol", "guess");
      expect(addressWait.statusCode).toBe(429);
      expect(Number(addressWait.headers["retry-after"])).toBeGreaterThan(1);
      expect(addressWait.body).toContain("Too many failed sign-ins from this address");
      // Another address signs alice in once her wait is over.
      time.advance(1_000);
      expect((await new Browser(t, "198.51.100.31").signIn()).statusCode).toBe(303);
    } finally {
      await t.close();
    }
  });
});

describe("logs", () => {
  it("never hold the password, the session token or a CSRF token", async () => {
    const lines: string[] = [];
    const { t } = await app({ WHARF_LOG_LEVEL: "info" }, undefined, lines);
    try {
      const browser = new Browser(t);
      const wrong = `wrong-${randomBytes(8).toString("hex")}`;
      await browser.signIn("alice", wrong);
      await browser.signIn();
      const token = browser.cookies.get("wharf_session") ?? "";
      expect(token).not.toBe("");
      const csrf = tokenIn((await browser.request({ url: "/sign-in" })).body);
      await browser.request({ method: "POST", url: "/sign-out", form: {} }); // refused, logged
      await browser.request({ method: "POST", url: "/sign-out", form: { _csrf: csrf } });
      const log = lines.join("\n");
      expect(log).toContain("signed in to the web UI");
      for (const secret of [PASSWORD, wrong, token, csrf, browser.cookies.get("wharf_sign_in") ?? "none"]) {
        expect(log).not.toContain(secret);
      }
    } finally {
      await t.close();
    }
  });
});
