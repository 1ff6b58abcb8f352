import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createUiSessionStore,
  type SignInOrigin,
  type UiSession,
  type UiSessionStore,
} from "../../../src/areas/web-ui/session/session-store.js";
import { createPostgresUiSessionStore } from "../../../src/areas/web-ui/session/session-store-postgres.js";
import type { Clock } from "../../../src/domain/clock.js";
import { changeWatchOf } from "../../../src/storage/change-watch.js";
import { openPostgres, type PostgresPool } from "../../../src/storage/postgres/connection.js";
import type { PostgresDb } from "../../../src/storage/postgres/database.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { manualClock } from "../../helpers/clock.js";

const config = { uiSessions: { idleMinutes: 30, absoluteHours: 12 } };
const MINUTE = 60_000;
const IDLE = 30 * MINUTE;
const ABSOLUTE = 12 * 60 * MINUTE;
const ORIGIN = { address: "203.0.113.7", userAgent: "Laptop Browser" };

const sha256 = (text: string) => createHash("sha256").update(text).digest();
const stampOf = (passwordHash: string) => sha256(passwordHash).toString("hex").slice(0, 32);

const repositoryOn = (database: TestDatabase, clock: Clock): UiSessionStore =>
  database.kind === "sqlite"
    ? createUiSessionStore({ db: database.sqlite, clock, config })
    : createPostgresUiSessionStore(database.postgres, { clock, config });

/** A promise's state, read without waiting for it. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  return settled;
}

describeOnBothDatabases("Web UI session store", (database) => {
  const time = manualClock();
  let sessions: UiSessionStore;
  /** On PostgreSQL, a second node: the same database through a pool of its own. */
  let otherPool: PostgresPool | undefined;
  let otherNode: UiSessionStore | undefined;

  beforeAll(() => {
    const db = database();
    sessions = repositoryOn(db, time.clock);
    if (db.kind === "postgres") {
      otherPool = openPostgres(db.postgres.pool.options.connectionString as string, {
        applicationName: "wharf test, second node",
      });
      otherNode = createPostgresUiSessionStore({ pool: otherPool, committed: () => {} }, { clock: time.clock, config });
    }
  });
  afterAll(async () => {
    await otherPool?.end();
  });

  const user = async (name: string, passwordHash: string | null = `scrypt$${name}`) =>
    (
      (await database().exec(
        "INSERT INTO users (name, name_key, password_hash, created_at) VALUES (?, ?, ?, ?) RETURNING id",
        [name, name.toLowerCase(), passwordHash, time.at()],
      )) as [{ id: number }]
    )[0].id;
  const rowsOf = async (userId: number) =>
    database().exec(
      `SELECT id, token_hash, user_id, csrf_secret, password_stamp, created_at, last_seen_at, expires_at, address, user_agent
         FROM ui_sessions WHERE user_id = ? ORDER BY id`,
      [userId],
    );
  const lastSeen = async (sessionId: number) =>
    (
      (await database().exec("SELECT last_seen_at FROM ui_sessions WHERE id = ?", [sessionId])) as [
        { last_seen_at: string } | undefined,
      ]
    )[0]?.last_seen_at;
  const signIn = async (userId: number, origin: SignInOrigin = ORIGIN, store = sessions) =>
    (await store.start(userId, origin)) as { token: string; session: UiSession };

  it("starts a session, stores only its token's hash with the password's stamp, and finds it by the token", async () => {
    const ann = await user("Ann");
    const signedInAt = time.at();
    const started = await sessions.start(ann, ORIGIN);
    expect(started?.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const { token, session } = started as { token: string; session: UiSession };
    expect(session).toEqual({
      id: session.id,
      principal: { type: "user", userId: ann, userName: "Ann", via: "password" },
      csrfSecret: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/) as string,
      expiresAt: new Date(Date.parse(signedInAt) + ABSOLUTE),
    });
    expect(await rowsOf(ann)).toEqual([
      {
        id: session.id,
        token_hash: sha256(token),
        user_id: ann,
        csrf_secret: session.csrfSecret,
        password_stamp: stampOf("scrypt$Ann"),
        created_at: signedInAt,
        last_seen_at: signedInAt,
        expires_at: new Date(Date.parse(signedInAt) + ABSOLUTE).toISOString(),
        address: ORIGIN.address,
        user_agent: ORIGIN.userAgent,
      },
    ]);
    expect(await sessions.find(token)).toEqual(session);
    expect(await sessions.find(`${token}x`)).toBeUndefined();
    expect(await sessions.find("")).toBeUndefined();
  });

  it("bounds the origin's address and browser, and keeps an unknown origin as none", async () => {
    const amy = await user("Amy");
    const long = await signIn(amy, { address: "a".repeat(100), userAgent: "b".repeat(600) });
    const none = await signIn(amy, { address: undefined, userAgent: undefined });
    const rows = await rowsOf(amy);
    expect(rows.map((row) => [row.id, row.address, row.user_agent])).toEqual([
      [long.session.id, "a".repeat(64), "b".repeat(512)],
      [none.session.id, null, null],
    ]);
    expect((await sessions.listOf(amy)).find((s) => s.id === none.session.id)).toEqual({
      id: none.session.id,
      createdAt: time.at(),
      lastSeenAt: time.at(),
      address: undefined,
      userAgent: undefined,
    });
  });

  it("starts no session for a user without a password or an unknown one", async () => {
    const carl = await user("Carl", null);
    expect(await sessions.start(carl, ORIGIN)).toBeUndefined();
    expect(await sessions.start(999_999, ORIGIN)).toBeUndefined();
    expect(await rowsOf(carl)).toEqual([]);
    expect(await rowsOf(999_999)).toEqual([]);
  });

  it("stamps the last use at most once a minute", async () => {
    const bea = await user("Bea");
    const { token, session } = await signIn(bea);
    const signedInAt = time.at();
    time.advance(MINUTE - 1);
    expect(await sessions.find(token)).toEqual(session);
    expect(await lastSeen(session.id)).toBe(signedInAt);
    time.advance(1);
    expect(await sessions.find(token)).toEqual(session);
    expect(await lastSeen(session.id)).toBe(time.at());
    const stamped = time.at();
    time.advance(30_000);
    expect(await sessions.find(token)).toEqual(session);
    expect(await lastSeen(session.id)).toBe(stamped);
    expect((await sessions.listOf(bea)).map((s) => [s.createdAt, s.lastSeenAt])).toEqual([[signedInAt, stamped]]);
  });

  it("ends a session idle too long, and one at its absolute expiry however used, deleting its row", async () => {
    const cid = await user("Cid");
    const idle = await signIn(cid);
    time.advance(IDLE - 1);
    expect(await sessions.find(idle.token)).toEqual(idle.session);
    time.advance(IDLE - 1);
    expect(await sessions.find(idle.token)).toEqual(idle.session);
    time.advance(IDLE);
    expect(await sessions.find(idle.token)).toBeUndefined();
    expect(await rowsOf(cid)).toEqual([]);

    const busy = await signIn(cid);
    const expiresAt = Date.parse(time.at()) + ABSOLUTE;
    while (Date.parse(time.at()) + 20 * MINUTE < expiresAt) {
      time.advance(20 * MINUTE);
      expect(await sessions.find(busy.token)).toEqual(busy.session);
    }
    time.advance(expiresAt - Date.parse(time.at()));
    expect(await sessions.find(busy.token)).toBeUndefined();
    expect(await rowsOf(cid)).toEqual([]);
  });

  it("ends every session when its user's password changes or is removed, and with its user", async () => {
    const dee = await user("Dee");
    const first = await signIn(dee);
    await database().exec("UPDATE users SET password_hash = 'scrypt$new' WHERE id = ?", [dee]);
    expect(await sessions.find(first.token)).toBeUndefined();
    expect(await rowsOf(dee)).toEqual([]);

    const second = await signIn(dee);
    expect((await rowsOf(dee))[0]?.password_stamp).toBe(stampOf("scrypt$new"));
    expect(await sessions.find(second.token)).toEqual(second.session);
    await database().exec("UPDATE users SET password_hash = NULL WHERE id = ?", [dee]);
    expect(await sessions.find(second.token)).toBeUndefined();
    expect(await rowsOf(dee)).toEqual([]);

    await database().exec("UPDATE users SET password_hash = 'scrypt$again' WHERE id = ?", [dee]);
    const third = await signIn(dee);
    await database().exec("DELETE FROM users WHERE id = ?", [dee]);
    expect(await rowsOf(dee)).toEqual([]);
    expect(await sessions.find(third.token)).toBeUndefined();
  });

  it("ends a session by its token, and an unknown token ends nothing", async () => {
    const eve = await user("Eve");
    const ended = await signIn(eve);
    const kept = await signIn(eve);
    await expect(sessions.end(ended.token)).resolves.toBeUndefined();
    expect(await sessions.find(ended.token)).toBeUndefined();
    await expect(sessions.end(ended.token)).resolves.toBeUndefined();
    await expect(sessions.end("no-such-token")).resolves.toBeUndefined();
    expect((await rowsOf(eve)).map((row) => row.id)).toEqual([kept.session.id]);
    expect(await sessions.find(kept.token)).toEqual(kept.session);
  });

  it("lists a user's live sessions, most recently seen first, then newest first", async () => {
    const fay = await user("Fay");
    const gus = await user("Gus");
    const old = await signIn(fay, { address: "198.51.100.1", userAgent: "Old Browser" });
    const oldAt = time.at();
    time.advance(IDLE / 2);
    const phone = await signIn(fay, { address: "198.51.100.2", userAgent: "Phone Browser" });
    const tablet = await signIn(fay, { address: undefined, userAgent: "Tablet Browser" });
    await signIn(gus);
    const laterAt = time.at();
    expect(await sessions.listOf(fay)).toEqual([
      {
        id: tablet.session.id,
        createdAt: laterAt,
        lastSeenAt: laterAt,
        address: undefined,
        userAgent: "Tablet Browser",
      },
      {
        id: phone.session.id,
        createdAt: laterAt,
        lastSeenAt: laterAt,
        address: "198.51.100.2",
        userAgent: "Phone Browser",
      },
      { id: old.session.id, createdAt: oldAt, lastSeenAt: oldAt, address: "198.51.100.1", userAgent: "Old Browser" },
    ]);

    time.advance(MINUTE);
    await sessions.find(phone.token);
    expect((await sessions.listOf(fay)).map((s) => s.id)).toEqual([
      phone.session.id,
      tablet.session.id,
      old.session.id,
    ]);
    // The oldest is idle now: not listed, though nothing deleted its row yet.
    time.advance(IDLE / 2);
    expect((await sessions.listOf(fay)).map((s) => s.id)).toEqual([phone.session.id, tablet.session.id]);
    expect(await rowsOf(fay)).toHaveLength(3);
    expect(await sessions.listOf(999_999)).toEqual([]);
  });

  it("purges dead sessions of every user at a sign-in, and keeps live ones", async () => {
    const hal = await user("Hal");
    const ida = await user("Ida");
    await signIn(hal);
    const idaOld = await signIn(ida);
    time.advance(IDLE / 2);
    const idaLive = await signIn(ida);
    const halLive = await signIn(hal);
    time.advance(IDLE / 2);
    await database().exec("UPDATE ui_sessions SET expires_at = ? WHERE id = ?", [time.at(), idaLive.session.id]);
    expect((await rowsOf(hal)).map((row) => row.id)).toHaveLength(2);
    const fresh = await signIn(hal);
    expect((await rowsOf(hal)).map((row) => row.id)).toEqual([halLive.session.id, fresh.session.id]);
    // Ida's first is idle; her second was at its absolute expiry: both go with Hal's sign-in.
    expect(await rowsOf(ida)).toEqual([]);
    expect(await sessions.find(idaOld.token)).toBeUndefined();
  });

  it("ends one of the user's own sessions once, never another user's", async () => {
    const jo = await user("Jo");
    const kim = await user("Kim");
    const mine = await signIn(jo);
    const theirs = await signIn(kim);
    expect(await sessions.endOne(jo, theirs.session.id)).toBe(false);
    expect(await sessions.find(theirs.token)).toEqual(theirs.session);
    expect(await sessions.endOne(jo, mine.session.id)).toBe(true);
    expect(await sessions.endOne(jo, mine.session.id)).toBe(false);
    expect(await sessions.endOne(jo, 999_999)).toBe(false);
    expect(await sessions.find(mine.token)).toBeUndefined();
    expect(await rowsOf(jo)).toEqual([]);
  });

  it("ends every other session of the user, keeping this one and other users'", async () => {
    const lou = await user("Lou");
    const max = await user("Max");
    const here = await signIn(lou);
    await signIn(lou);
    await signIn(lou);
    const someoneElse = await signIn(max);
    expect(await sessions.endOthers(lou, here.session.id)).toBe(2);
    expect((await rowsOf(lou)).map((row) => row.id)).toEqual([here.session.id]);
    expect(await sessions.endOthers(lou, here.session.id)).toBe(0);
    expect(await sessions.find(someoneElse.token)).toEqual(someoneElse.session);
    // Another user's session id kept ends every session of this user.
    expect(await sessions.endOthers(lou, someoneElse.session.id)).toBe(1);
    expect(await rowsOf(lou)).toEqual([]);
    expect(await sessions.find(someoneElse.token)).toEqual(someoneElse.session);
  });

  it("writes quietly: no session write moves the caches' version or notifies a node", async () => {
    const db = database();
    const ned = await user("Ned");
    let listener: pg.Client | undefined;
    const heard: string[] = [];
    if (db.kind === "postgres") {
      listener = new pg.Client({ connectionString: db.postgres.pool.options.connectionString as string });
      await listener.connect();
      listener.on("notification", (message) => heard.push(message.payload ?? ""));
      await listener.query("LISTEN wharf_changes");
    }
    try {
      const watch = db.kind === "sqlite" ? changeWatchOf(db.sqlite) : undefined;
      const version = watch?.version();
      const commits = db.kind === "postgres" ? db.commits() : 0;

      const one = await signIn(ned);
      const two = await signIn(ned);
      const three = await signIn(ned);
      time.advance(MINUTE);
      expect(await sessions.find(one.token)).toEqual(one.session);
      expect(await lastSeen(one.session.id)).toBe(time.at());
      await sessions.end(two.token);
      expect(await sessions.endOne(ned, three.session.id)).toBe(true);
      await signIn(ned);
      expect(await sessions.endOthers(ned, one.session.id)).toBe(1);
      time.advance(IDLE);
      expect(await sessions.find(one.token)).toBeUndefined();
      expect(await rowsOf(ned)).toEqual([]);

      if (watch !== undefined) {
        watch.refresh();
        expect(watch.version()).toBe(version);
      }
      if (db.kind === "postgres" && listener !== undefined) {
        expect(db.commits()).toBe(commits);
        // Notifications keep commit order: once our marker arrives, any session write's has too.
        await db.exec("SELECT pg_notify('wharf_changes', 'marker')");
        while (!heard.includes("marker")) await new Promise((resolve) => setTimeout(resolve, 5));
        expect(heard).toEqual(["marker"]);
      }
    } finally {
      await listener?.end();
    }
  });

  // PostgreSQL: several nodes, where SQLite had one writer at a time.

  it("waits for a user's deletion in progress and then starts no session, never a foreign key error (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const ola = await user("Ola");
    const deleting = new pg.Client({ connectionString: db.postgres.pool.options.connectionString as string });
    await deleting.connect();
    try {
      await deleting.query("BEGIN");
      await deleting.query("DELETE FROM users WHERE id = $1", [ola]);
      const starting = sessions.start(ola, ORIGIN);
      expect(await settledYet(starting)).toBe(false);
      await deleting.query("COMMIT");
      expect(await starting).toBeUndefined();
      expect(await rowsOf(ola)).toEqual([]);
    } finally {
      await deleting.end();
    }
  });

  it("lets sign-ins on two nodes purge and insert at once, without waiting or failing (PostgreSQL)", async () => {
    if (database().kind !== "postgres" || otherNode === undefined) return;
    const node = otherNode;
    const quin = await user("Quin");
    const rae = await user("Rae");
    const doomed = await Promise.all([signIn(quin), signIn(rae), signIn(quin), signIn(rae)]);
    time.advance(IDLE);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => signIn(i % 2 === 0 ? quin : rae, ORIGIN, i % 3 === 0 ? node : sessions)),
    );
    expect(new Set(results.map((r) => r.session.id)).size).toBe(12);
    const left = [...(await rowsOf(quin)), ...(await rowsOf(rae))].map((row) => row.id);
    expect(left.sort((a, b) => Number(a) - Number(b))).toEqual(results.map((r) => r.session.id).sort((a, b) => a - b));
    for (const { token } of doomed) expect(await sessions.find(token)).toBeUndefined();
  });

  it("signs in without waiting for a dead session row another transaction holds, leaving it to a later purge (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const xia = await user("Xia");
    const dead = await signIn(xia);
    time.advance(IDLE);
    const holder = await db.postgres.pool.connect();
    let signedIn: { token: string; session: UiSession } | undefined;
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT id FROM ui_sessions WHERE id = $1 FOR UPDATE", [dead.session.id]);
      const starting = sessions.start(xia, ORIGIN);
      expect(await settledYet(starting)).toBe(true);
      signedIn = await starting;
      expect((await rowsOf(xia)).map((row) => row.id)).toEqual([dead.session.id, signedIn?.session.id]);
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    const next = await signIn(xia);
    expect((await rowsOf(xia)).map((row) => row.id)).toEqual([signedIn?.session.id, next.session.id]);
  });

  it("skips a last-use stamp rather than wait for a session row another transaction holds (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const sam = await user("Sam");
    const { token, session } = await signIn(sam);
    const signedInAt = time.at();
    time.advance(MINUTE);
    const holder = await db.postgres.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT id FROM ui_sessions WHERE id = $1 FOR UPDATE", [session.id]);
      const finding = sessions.find(token);
      expect(await settledYet(finding)).toBe(true);
      expect(await finding).toEqual(session);
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
    expect(await lastSeen(session.id)).toBe(signedInAt);
    expect(await sessions.find(token)).toEqual(session);
    expect(await lastSeen(session.id)).toBe(time.at());
  });

  /** A node whose reads are followed, before the read's answer is used, by `meanwhile`. */
  function nodeWithWriteAfterRead(db: PostgresDb, meanwhile: () => Promise<void>): UiSessionStore {
    // `meanwhile` runs once the node's first statement (the read) has answered, whether it went
    // through the pool or a checked-out connection.
    let read = false;
    const afterRead = async (result: unknown) => {
      if (!read) {
        read = true;
        await meanwhile();
      }
      return result;
    };
    const hooked = <T extends object>(target: T, connect?: () => Promise<pg.PoolClient>): T =>
      new Proxy(target, {
        get(object, property) {
          if (property === "query") {
            const query = (object as unknown as { query: (...a: unknown[]) => Promise<unknown> }).query.bind(object);
            return async (...args: unknown[]) => afterRead(await query(...args));
          }
          if (property === "connect" && connect !== undefined) return async () => hooked(await connect());
          const value = Reflect.get(object, property, object) as unknown;
          return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(object) : value;
        },
      });
    const pool = hooked(db.pool, () => db.pool.connect());
    return createPostgresUiSessionStore({ pool, committed: db.committed }, { clock: time.clock, config });
  }

  it("stamps and deletes only the row as it read it: another node's stamp in between stands (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const tia = await user("Tia");
    const due = await signIn(tia);
    time.advance(MINUTE);
    const otherStamp = new Date(Date.parse(time.at()) + 1_000).toISOString();
    const stampElsewhere = (id: number) => async () => {
      await db.exec("UPDATE ui_sessions SET last_seen_at = ? WHERE id = ?", [otherStamp, id]);
    };
    expect(await nodeWithWriteAfterRead(db.postgres, stampElsewhere(due.session.id)).find(due.token)).toEqual(
      due.session,
    );
    expect(await lastSeen(due.session.id)).toBe(otherStamp);

    // Idle here, stamped meanwhile by a node that found it live: this node answers no session, the row stays.
    const idle = await signIn(tia);
    time.advance(IDLE);
    const stamped = new Date(Date.parse(time.at()) - MINUTE).toISOString();
    expect(
      await nodeWithWriteAfterRead(db.postgres, async () => {
        await db.exec("UPDATE ui_sessions SET last_seen_at = ? WHERE id = ?", [stamped, idle.session.id]);
      }).find(idle.token),
    ).toBeUndefined();
    expect(await lastSeen(idle.session.id)).toBe(stamped);
    expect(await sessions.find(idle.token)).toEqual(idle.session);
  });

  it("answers two nodes finding one session at once, and stamps its last use (PostgreSQL)", async () => {
    if (database().kind !== "postgres" || otherNode === undefined) return;
    const uma = await user("Uma");
    const { token, session } = await signIn(uma);
    time.advance(MINUTE);
    for (let i = 0; i < 5; i++) {
      time.advance(MINUTE);
      const found = await Promise.all([sessions.find(token), otherNode.find(token), sessions.find(token)]);
      expect(found).toEqual([session, session, session]);
      expect(await lastSeen(session.id)).toBe(time.at());
    }
  });

  it("ends one session once when two nodes end it at once (PostgreSQL)", async () => {
    if (database().kind !== "postgres" || otherNode === undefined) return;
    const vic = await user("Vic");
    const { session } = await signIn(vic);
    const ended = await Promise.all([sessions.endOne(vic, session.id), otherNode.endOne(vic, session.id)]);
    expect(ended.sort()).toEqual([false, true]);
    expect(await rowsOf(vic)).toEqual([]);
  });

  it("ends every session when two browsers each end the others at once on two nodes (PostgreSQL)", async () => {
    if (database().kind !== "postgres" || otherNode === undefined) return;
    const wes = await user("Wes");
    const [laptop, phone] = await Promise.all([signIn(wes), signIn(wes), signIn(wes), signIn(wes)]);
    const counts = await Promise.all([
      sessions.endOthers(wes, (laptop as { session: UiSession }).session.id),
      otherNode.endOthers(wes, (phone as { session: UiSession }).session.id),
    ]);
    // As one after the other: the first ends three, the second the first's browser.
    expect(counts.sort()).toEqual([1, 3]);
    expect(await rowsOf(wes)).toEqual([]);
  });
});
