import type pg from "pg";

/** What the current checkout of a pooled connection is known to do. */
type Use =
  /** Anything: a caller outside database.ts's helpers, which may write without telling. */
  | "unknown"
  /** Nothing that notifies: a read, a READ ONLY snapshot, a quiet transaction. */
  | "silent"
  /** It committed, and `localCommit` counted that after COMMIT answered: nothing more runs on it. */
  | "counted";

interface Connection {
  readonly pid: number;
  /** Undefined while the connection is idle in the pool. */
  use: Use | undefined;
  /**
   * When `localCommit` last counted a commit of this connection, provided every checkout since was
   * silent: every commit it ever made was then counted at or before that moment. Undefined otherwise.
   */
  countedAt: number | undefined;
}

/**
 * The node's own pooled connections, by backend process id, so that the change feed can tell a
 * notification it caused and already counted (localCommit) from one it must count. A notification
 * carries the pid of the backend that committed (pids are unique among a server's live backends).
 *
 * A notification from connection P may be skipped only when the commit behind it was counted after
 * it became visible: when a `localCommit` of P ran after a COMMIT of P answered, and P has not been
 * used since but for work that notifies nothing. Notifications of one backend arrive in its commit
 * order, so one arriving then is from that commit or an earlier one of P, all visible before the
 * count. One arriving while P is in use otherwise, or before the count (it may be a commit whose
 * COMMIT has not answered yet: its count could be late without bound), is counted as any other.
 *
 * A credit lasts until a heartbeat sent after it is answered (every notification committed before
 * then has arrived: change-feed.ts) or `maxAgeMs`, and ends with the connection: a pid outlives
 * its backend only in this map, for the moment between a backend's death and its socket's end.
 */
export class OwnConnections {
  readonly #byPid = new Map<number, Connection>();
  readonly #byClient = new WeakMap<pg.ClientBase, Connection>();

  constructor(private readonly maxAgeMs: number) {}

  /** Follows the pool's connections from now on; connections opened before are never recognised. */
  track(pool: pg.Pool): void {
    pool.on("connect", (client) => {
      const pid = processIdOf(client);
      if (pid === undefined) return;
      const connection: Connection = { pid, use: undefined, countedAt: undefined };
      this.#byPid.set(pid, connection);
      this.#byClient.set(client, connection);
      client.once("end", () => this.#forget(connection));
    });
    pool.on("acquire", (client) => {
      const connection = this.#byClient.get(client);
      if (connection !== undefined) connection.use = "unknown";
    });
    pool.on("release", (_error, client) => {
      const connection = this.#byClient.get(client);
      if (connection === undefined) return;
      if (connection.use === "unknown") connection.countedAt = undefined;
      connection.use = undefined;
    });
    pool.on("remove", (client) => {
      const connection = this.#byClient.get(client);
      if (connection !== undefined) this.#forget(connection);
    });
  }

  /** The checkout of `client` notifies nothing (called before it sends anything). */
  silent(client: pg.ClientBase): void {
    const connection = this.#byClient.get(client);
    if (connection?.use === "unknown") connection.use = "silent";
  }

  /** `client`'s COMMIT answered and the commit was counted; nothing more runs in this checkout. */
  counted(client: pg.ClientBase, at: number): void {
    const connection = this.#byClient.get(client);
    if (connection === undefined || connection.use === undefined) return;
    connection.use = "counted";
    connection.countedAt = at;
  }

  /** Whether every commit a notification from backend `pid` can be about was counted already. */
  countedAlready(pid: number, now: number): boolean {
    const connection = this.#byPid.get(pid);
    if (connection === undefined || connection.countedAt === undefined || connection.use === "unknown") return false;
    return now - connection.countedAt < this.maxAgeMs;
  }

  /** Every notification committed before `sentAt` has arrived: credits from before it are spent. */
  heardUpTo(sentAt: number): void {
    for (const connection of this.#byPid.values()) {
      if (connection.countedAt !== undefined && connection.countedAt < sentAt) connection.countedAt = undefined;
    }
  }

  #forget(connection: Connection): void {
    connection.countedAt = undefined;
    if (this.#byPid.get(connection.pid) === connection) this.#byPid.delete(connection.pid);
  }
}

/** The backend's process id, which pg reads at connection time (BackendKeyData) and does not type. */
function processIdOf(client: pg.ClientBase): number | undefined {
  const pid = (client as { processID?: unknown }).processID;
  return typeof pid === "number" ? pid : undefined;
}
