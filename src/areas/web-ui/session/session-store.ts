import { createHash, randomBytes } from "node:crypto";
import type { Config } from "../../../config.js";
import type { Clock } from "../../../domain/clock.js";
import type { Principal } from "../../../domain/principal.js";
import { retryWhileBusy, unlessBusy } from "../../../storage/busy.js";
import { changeWatchOf } from "../../../storage/change-watch.js";
import type { Db } from "../../../storage/database.js";

/** A signed-in browser's session, as the request that carries its cookie finds it. */
export interface UiSession {
  readonly id: number;
  readonly principal: Extract<Principal, { type: "user" }>;
  /** The secret this session's CSRF tokens are made from (never sent to the browser). */
  readonly csrfSecret: string;
  readonly expiresAt: Date;
}

/** Where a sign-in came from, kept on its row. */
export interface SignInOrigin {
  readonly address: string | undefined;
  readonly userAgent: string | undefined;
}

/** One of a user's sessions as their account page lists it (never its token or CSRF secret). */
export interface SessionSummary {
  readonly id: number;
  readonly createdAt: string;
  readonly lastSeenAt: string;
  readonly address: string | undefined;
  readonly userAgent: string | undefined;
}

/** Server-side session rows (migrations/0015-ui-sessions.sql). */
export interface UiSessionStore {
  /** A new session for the user: the token for the cookie (never stored; its hash is) and the row. */
  start(userId: number, origin: SignInOrigin): Promise<{ token: string; session: UiSession } | undefined>;
  /** The live session of a cookie's token; an expired one is deleted and undefined. */
  find(token: string): Promise<UiSession | undefined>;
  /** Ends the session of a cookie's token (sign-out, or a sign-in replacing it). */
  end(token: string): Promise<void>;
  /** The user's live sessions, most recently seen first. */
  listOf(userId: number): Promise<SessionSummary[]>;
  /** Ends one of the user's sessions (another user's id ends nothing); whether one ended. */
  endOne(userId: number, sessionId: number): Promise<boolean>;
  /** Ends every session of the user but `keepId` (this browser's); how many ended. */
  endOthers(userId: number, keepId: number): Promise<number>;
}

export interface UiSessionStoreDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly config: Pick<Config, "uiSessions">;
}

/** last_seen_at is written at most this often per session: no write per request. */
const TOUCH_INTERVAL_MS = 60_000;
const MAX_USER_AGENT = 512;
const MAX_ADDRESS = 64;

export interface SessionRow {
  id: number;
  user_id: number;
  user_name: string;
  password_hash: string | null;
  password_stamp: string;
  csrf_secret: string;
  last_seen_at: string;
  expires_at: string;
}

export interface SummaryRow {
  id: number;
  created_at: string;
  last_seen_at: string;
  address: string | null;
  user_agent: string | null;
}

export interface SignInUserRow {
  name: string;
  password_hash: string | null;
}

/** A session with its user, without the WHERE clause (both databases). */
export const SESSION_SELECT = `SELECT s.id, s.user_id, u.name AS user_name, u.password_hash, s.password_stamp, s.csrf_secret,
            s.last_seen_at, s.expires_at
       FROM ui_sessions s JOIN users u ON u.id = s.user_id`;

/** The account page's columns, without the WHERE clause (both databases). */
export const SUMMARY_SELECT = "SELECT id, created_at, last_seen_at, address, user_agent FROM ui_sessions";

/** The table and columns of a new session, in insertValues' order (both databases). */
export const INSERT_SESSION_COLUMNS = `ui_sessions (token_hash, user_id, csrf_secret, password_stamp, created_at, last_seen_at, expires_at,
                              address, user_agent)`;

/** The configured idle and absolute lifetimes, in milliseconds (both databases). */
export function sessionLifetimes(config: Pick<Config, "uiSessions">): { idleMs: number; absoluteMs: number } {
  return {
    idleMs: config.uiSessions.idleMinutes * 60_000,
    absoluteMs: config.uiSessions.absoluteHours * 3_600_000,
  };
}

/** Whether a session row is live at `now` (both databases). */
export function isLive(row: SessionRow, now: number, idleMs: number): boolean {
  // A password changed or removed since the sign-in ends the session; a deleted user took the row along.
  if (row.password_hash === null || passwordStamp(row.password_hash) !== row.password_stamp) return false;
  return Date.parse(row.expires_at) > now && now - Date.parse(row.last_seen_at) < idleMs;
}

/** Whether a live session's last_seen_at is due to be written at `now` (both databases). */
export const touchDue = (row: SessionRow, now: number): boolean =>
  now - Date.parse(row.last_seen_at) >= TOUCH_INTERVAL_MS;

/** A live session row as the request that carries its cookie finds it (both databases). */
export function sessionOf(row: SessionRow): UiSession {
  return {
    id: row.id,
    principal: { type: "user", userId: row.user_id, userName: row.user_name, via: "password" },
    csrfSecret: row.csrf_secret,
    expiresAt: new Date(row.expires_at),
  };
}

/** A row as the account page lists it (both databases). */
export function summaryOf(row: SummaryRow): SessionSummary {
  return {
    id: row.id,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    address: row.address ?? undefined,
    userAgent: row.user_agent ?? undefined,
  };
}

/** What a sign-in makes before it writes anything (both databases). */
export interface NewSession {
  readonly token: string;
  readonly csrfSecret: string;
  readonly now: number;
  readonly expiresAt: Date;
}

export function newSession(clock: Clock, absoluteMs: number): NewSession {
  const token = randomBytes(32).toString("base64url");
  const csrfSecret = randomBytes(24).toString("base64url");
  const now = clock.now().getTime();
  return { token, csrfSecret, now, expiresAt: new Date(now + absoluteMs) };
}

type InsertValues = [Buffer, number, string, string, string, string, string, string | null, string | null];

/** The values of INSERT_SESSION_COLUMNS, in its order (both databases). */
export function insertValues(
  fresh: NewSession,
  userId: number,
  passwordHash: string,
  origin: SignInOrigin,
): InsertValues {
  return [
    tokenHash(fresh.token),
    userId,
    fresh.csrfSecret,
    passwordStamp(passwordHash),
    iso(fresh.now),
    iso(fresh.now),
    fresh.expiresAt.toISOString(),
    origin.address?.slice(0, MAX_ADDRESS) ?? null,
    origin.userAgent?.slice(0, MAX_USER_AGENT) ?? null,
  ];
}

/** What start answers once the row is written (both databases). */
export function started(
  fresh: NewSession,
  userId: number,
  userName: string,
  id: number,
): { token: string; session: UiSession } {
  const principal = { type: "user", userId, userName, via: "password" } as const;
  return {
    token: fresh.token,
    session: { id, principal, csrfSecret: fresh.csrfSecret, expiresAt: fresh.expiresAt },
  };
}

export function createUiSessionStore({ db, clock, config }: UiSessionStoreDeps): UiSessionStore {
  const { idleMs, absoluteMs } = sessionLifetimes(config);
  // Session writes change nothing any cache depends on: they leave the change version alone, so
  // that a sign-in does not make every cached key, grant and download be read again.
  const watch = changeWatchOf(db);
  const byToken = db.prepare<[Buffer], SessionRow>(
    `${SESSION_SELECT}
      WHERE s.token_hash = ?`,
  );
  const userOf = db.prepare<[number], SignInUserRow>("SELECT name, password_hash FROM users WHERE id = ?");
  const insert = db.prepare<InsertValues>(
    `INSERT INTO ${INSERT_SESSION_COLUMNS}
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const purgeExpired = db.prepare<[string, string]>(
    "DELETE FROM ui_sessions WHERE expires_at <= ? OR last_seen_at <= ?",
  );
  const deleteById = db.prepare<[number]>("DELETE FROM ui_sessions WHERE id = ?");
  const deleteByHash = db.prepare<[Buffer]>("DELETE FROM ui_sessions WHERE token_hash = ?");
  const ofUser = db.prepare<[number, string, string], SummaryRow>(
    `${SUMMARY_SELECT}
      WHERE user_id = ? AND expires_at > ? AND last_seen_at > ? ORDER BY last_seen_at DESC, id DESC`,
  );
  // Bound to the user as well as the id: a forged id of someone else's session ends nothing.
  const deleteOwn = db.prepare<[number, number]>("DELETE FROM ui_sessions WHERE id = ? AND user_id = ?");
  const deleteOthers = db.prepare<[number, number]>("DELETE FROM ui_sessions WHERE user_id = ? AND id <> ?");
  const touch = db.prepare<[string, number]>("UPDATE ui_sessions SET last_seen_at = ? WHERE id = ?");

  return {
    async start(userId, origin) {
      const fresh = newSession(clock, absoluteMs);
      const { now } = fresh;
      return retryWhileBusy(db, () =>
        watch.quietly(() =>
          db
            .transaction(() => {
              const user = userOf.get(userId);
              if (!user?.password_hash) return undefined;
              purgeExpired.run(iso(now), iso(now - idleMs));
              const { lastInsertRowid } = insert.run(...insertValues(fresh, userId, user.password_hash, origin));
              return started(fresh, userId, user.name, Number(lastInsertRowid));
            })
            .immediate(),
        ),
      );
    },

    async find(token) {
      const row = byToken.get(tokenHash(token));
      if (row === undefined) return undefined;
      const now = clock.now().getTime();
      if (!isLive(row, now, idleMs)) {
        unlessBusy(() => watch.quietly(() => deleteById.run(row.id)));
        return undefined;
      }
      if (touchDue(row, now)) {
        // Bookkeeping: skipped while another process holds the write lock, done by a later request.
        unlessBusy(() => watch.quietly(() => touch.run(iso(now), row.id)));
      }
      return sessionOf(row);
    },

    async end(token) {
      await retryWhileBusy(db, () => watch.quietly(() => deleteByHash.run(tokenHash(token))));
    },

    async listOf(userId) {
      const now = clock.now().getTime();
      return ofUser.all(userId, iso(now), iso(now - idleMs)).map(summaryOf);
    },

    async endOne(userId, sessionId) {
      const { changes } = await retryWhileBusy(db, () => watch.quietly(() => deleteOwn.run(sessionId, userId)));
      return changes > 0;
    },

    async endOthers(userId, keepId) {
      const { changes } = await retryWhileBusy(db, () => watch.quietly(() => deleteOthers.run(userId, keepId)));
      return changes;
    },
  };
}

export const iso = (ms: number) => new Date(ms).toISOString();

/** What is stored of a cookie's token: its SHA-256 (both databases). */
export function tokenHash(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

function passwordStamp(passwordHash: string): string {
  return createHash("sha256").update(passwordHash).digest("hex").slice(0, 32);
}
