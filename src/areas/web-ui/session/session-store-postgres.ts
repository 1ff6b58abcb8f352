import { type PostgresDb, quietTransaction, readRows } from "../../../storage/postgres/database.js";
import {
  INSERT_SESSION_COLUMNS,
  insertValues,
  isLive,
  iso,
  newSession,
  SESSION_SELECT,
  type SessionRow,
  sessionLifetimes,
  sessionOf,
  type SignInUserRow,
  started,
  SUMMARY_SELECT,
  type SummaryRow,
  summaryOf,
  tokenHash,
  touchDue,
  type UiSessionStore,
  type UiSessionStoreDeps,
} from "./session-store.js";

/**
 * UiSessionStore on PostgreSQL (cluster mode): the same rows and answers as on SQLite. Every write
 * is quiet (quietTransaction, as `watch.quietly` on SQLite): no node's cache reads session rows, so
 * a sign-in or a request's last-seen stamp makes no node read its caches again.
 *
 * Where SQLite's one writer decided a race, here: a sign-in holds its user's row against deletion
 * until its session is in; bookkeeping (the purge at sign-in, the last-seen stamp, deleting a dead
 * session when seen) never waits for a row another transaction holds (SKIP LOCKED, SQLite's
 * unlessBusy); the stamp and the delete of what `find` read apply only to the row as read.
 */
export function createPostgresUiSessionStore(
  db: PostgresDb,
  { clock, config }: Omit<UiSessionStoreDeps, "db">,
): UiSessionStore {
  const { idleMs, absoluteMs } = sessionLifetimes(config);

  return {
    async start(userId, origin) {
      const fresh = newSession(clock, absoluteMs);
      const { now } = fresh;
      return quietTransaction(db, async (client) => {
        // FOR KEY SHARE: the user cannot be deleted before this session is in (the insert would fail
        // its foreign key where SQLite answered "no such user"); a password change may go ahead, and
        // ends this session as it ends one made a moment before it.
        const [user] = (
          await client.query<SignInUserRow>("SELECT name, password_hash FROM users WHERE id = $1 FOR KEY SHARE", [
            userId,
          ])
        ).rows;
        if (!user?.password_hash) return undefined;
        // Housekeeping: a dead row another transaction holds (ending it, or another node's purge)
        // is left to it; no two sign-ins wait for each other, nor deadlock over their purges.
        await client.query(
          `DELETE FROM ui_sessions
            WHERE id IN (SELECT id FROM ui_sessions WHERE expires_at <= $1 OR last_seen_at <= $2 FOR UPDATE SKIP LOCKED)`,
          [iso(now), iso(now - idleMs)],
        );
        const inserted = await client.query<{ id: number }>(
          `INSERT INTO ${INSERT_SESSION_COLUMNS}
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
          insertValues(fresh, userId, user.password_hash, origin),
        );
        return started(fresh, userId, user.name, (inserted.rows[0] as { id: number }).id);
      });
    },

    async find(token) {
      const [row] = await readRows<SessionRow>(
        db,
        `${SESSION_SELECT}
      WHERE s.token_hash = $1`,
        [tokenHash(token)],
      );
      if (row === undefined) return undefined;
      const now = clock.now().getTime();
      if (!isLive(row, now, idleMs)) {
        // Only the row as read (another node that stamped it since saw it live), and not waited for.
        await quietTransaction(db, (client) =>
          client.query(
            `DELETE FROM ui_sessions
              WHERE id = (SELECT id FROM ui_sessions WHERE id = $1 AND last_seen_at = $2 FOR UPDATE SKIP LOCKED)`,
            [row.id, row.last_seen_at],
          ),
        );
        return undefined;
      }
      if (touchDue(row, now)) {
        // Bookkeeping: skipped when another transaction holds the row (SQLite: while another process
        // holds the write lock), and when another node stamped it since the read (one stamp a minute,
        // never moved back by a slower request); a later request stamps it.
        await quietTransaction(db, (client) =>
          client.query(
            `UPDATE ui_sessions SET last_seen_at = $1
              WHERE id = (SELECT id FROM ui_sessions WHERE id = $2 AND last_seen_at = $3 FOR NO KEY UPDATE SKIP LOCKED)`,
            [iso(now), row.id, row.last_seen_at],
          ),
        );
      }
      return sessionOf(row);
    },

    async end(token) {
      await quietTransaction(db, (client) =>
        client.query("DELETE FROM ui_sessions WHERE token_hash = $1", [tokenHash(token)]),
      );
    },

    async listOf(userId) {
      const now = clock.now().getTime();
      const rows = await readRows<SummaryRow>(
        db,
        `${SUMMARY_SELECT}
      WHERE user_id = $1 AND expires_at > $2 AND last_seen_at > $3 ORDER BY last_seen_at DESC, id DESC`,
        [userId, iso(now), iso(now - idleMs)],
      );
      return rows.map(summaryOf);
    },

    async endOne(userId, sessionId) {
      // Bound to the user as well as the id: a forged id of someone else's session ends nothing.
      const { rowCount } = await quietTransaction(db, (client) =>
        client.query("DELETE FROM ui_sessions WHERE id = $1 AND user_id = $2", [sessionId, userId]),
      );
      return (rowCount ?? 0) > 0;
    },

    async endOthers(userId, keepId) {
      // Waits for rows another transaction holds (a session must end, whoever is stamping it); a
      // session another request ended meanwhile is not counted, as SQLite's later statement would not.
      const { rowCount } = await quietTransaction(db, (client) =>
        client.query("DELETE FROM ui_sessions WHERE user_id = $1 AND id <> $2", [userId, keepId]),
      );
      return rowCount ?? 0;
    },
  };
}
