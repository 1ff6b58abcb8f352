import pg from "pg";
import type { ChangeWatch } from "../change-watch.js";
import { OwnConnections } from "./own-commits.js";

/** The channel migrations/postgres/0002-change-notifications.sql notifies on, with a table's name as payload. */
export const CHANGES_CHANNEL = "wharf_changes";

/**
 * Tables whose changes no cache keyed on `version()` reads, with the reason: their notifications
 * still reach `onChange` (what waits for work: the agent hub, the webhook dispatcher), but leave
 * every node's caches alone. Each is written often with nothing cached changing (an agent's every
 * log line, a job's, each webhook attempt). A table belongs here only once every reader of it has
 * been checked, joins and the caches' repositories included (the caches: the authenticator's,
 * the upack reads and download lookups, listings, badges, the feeds page, connectors' lists,
 * configuration status, the replays of http/hot-responses.ts); test/contract/
 * postgres-change-feed.test.ts fails when a new source file names one of them.
 */
export const TABLES_NO_CACHE_READS: ReadonlyMap<string, string> = new Map([
  [
    "agent_work",
    "agents' work in a cluster: read only by agent-hub-cluster.ts (through agent-work-repository-postgres.ts), which is woken by its notifications",
  ],
  [
    "package_deployments",
    "deployments announced by downloads: read only by the deployment listings (areas/package-deployment) and retention's evaluation (areas/retention), never cached",
  ],
  ["job_log", "jobs' log lines: read only when a job's log is asked for (jobs/runner-postgres.ts), never cached"],
  ["webhook_deliveries", "webhook attempts: read only by the webhook worker and its API (areas/webhooks)"],
  [
    "lifecycle_events",
    "the webhook outbox: read only by the webhook dispatcher (lifecycle/events-postgres.ts, areas/webhooks), which is woken by its notifications",
  ],
  ["audit_records", "the audit log: read only by the audit API and pages (areas/audit), never cached"],
  [
    "retention_runs",
    "retention runs' progress: read only by the retention API and pages (areas/retention), never cached",
  ],
]);

/** Backoff between attempts to get the listener back: from the first to the longest wait. */
const FIRST_RETRY_MS = 100;
const LONGEST_RETRY_MS = 5_000;

export interface PostgresChangeWatchOptions {
  readonly url: string;
  /** Shown in pg_stat_activity, so that an operator (or a test) can tell the listener from the pool. */
  readonly applicationName: string;
  /** A lost connection, a failed reconnect, a listener that threw: reported here, never thrown. */
  readonly onError?: (error: Error) => void;
  /** How often the listener asks the server for a sign of life (default 500 ms). */
  readonly heartbeatMs?: number;
  /**
   * How long an answer to a heartbeat vouches for the connection (default 2,000 ms): the longest a
   * cache may be served from after the connection dies without a word (a hung server, a network
   * path dropped without a reset), which TCP alone may take many minutes to notice.
   */
  readonly trustForMs?: number;
}

/**
 * ChangeWatch for one node of a cluster sharing one PostgreSQL: every committed write anywhere
 * (another node, the CLI, an administrator's psql) arrives as a NOTIFY on a dedicated connection
 * and moves `version()`; so do this node's own commits, at once, through `localCommit()`. The
 * contract is ChangeWatch's, with "committed before the request started" loosened by the time a
 * notification takes to arrive (a few milliseconds on a LAN; bench/cluster-invalidation.ts).
 *
 * Two kinds of notification leave `version()` alone: those of TABLES_NO_CACHE_READS, and this
 * node's own commits that `localCommit` already counted (own-commits.ts: `trackPool` follows the
 * pool's connections), so that a write empties this node's caches once, not again a round trip
 * later (a download right after its upload is served from what the first read kept).
 *
 * Whenever the watch cannot vouch that it has heard every notification (not started, connection
 * lost, heartbeat unanswered for `trustForMs`), `version()` returns a new value on every call, so
 * that no cache can hit; once it can again, it settles on a value it never returned before.
 *
 * `quietly` is not here: on PostgreSQL, quiet is a property of the transaction (`markQuiet`).
 */
export class PostgresChangeWatch implements Omit<ChangeWatch, "quietly"> {
  /** Moved by every notification, local commit, and call made while the watch cannot vouch. Only ever grows. */
  #counter = 0;
  /** Whether the previous `version()` could vouch: a value handed out while it could not must not come back. */
  #wasTrusted = false;
  /** The connection that is LISTENing, once LISTEN has completed; undefined while there is none. */
  #client: pg.Client | undefined;
  /** A connection being opened, so that close() can abandon it. */
  #opening: pg.Client | undefined;
  /** When the newest answered heartbeat was sent: every notification committed before then has arrived. */
  #heardAt = Number.NEGATIVE_INFINITY;
  /** When the unanswered heartbeat was sent; undefined when none is outstanding. */
  #beatSentAt: number | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #retry: { readonly timer: NodeJS.Timeout; readonly wake: () => void } | undefined;
  #closed = false;
  readonly #listeners = new Set<(table: string) => void>();
  readonly #heartbeatMs: number;
  readonly #trustForMs: number;
  readonly #own: OwnConnections;

  constructor(private readonly options: PostgresChangeWatchOptions) {
    this.#heartbeatMs = options.heartbeatMs ?? 500;
    this.#trustForMs = options.trustForMs ?? 2_000;
    this.#own = new OwnConnections(this.#trustForMs);
  }

  /**
   * Follows the node's pool, so that notifications of commits `localCommit(connection)` counted are
   * recognised (before the pool opens its first connection: earlier ones are never recognised).
   */
  trackPool(pool: pg.Pool): void {
    this.#own.track(pool);
  }

  /** Resolves once the listener is LISTENing; rejects if the first connection fails (the caller decides to retry or stop). */
  async start(): Promise<void> {
    await this.#open();
    this.#heartbeat = setInterval(() => this.#beat(), this.#heartbeatMs);
    this.#heartbeat.unref();
  }

  /** Whether a listener connection is up (for health pages and tests). */
  get listening(): boolean {
    return this.#client !== undefined;
  }

  version(): string {
    const trusted = this.#client !== undefined && performance.now() - this.#heardAt < this.#trustForMs;
    if (!trusted || !this.#wasTrusted) this.#counter++;
    this.#wasTrusted = trusted;
    return String(this.#counter);
  }

  /**
   * This node committed a write (call it after COMMIT returns, or after a COMMIT whose outcome is
   * unknown): its own NOTIFY arrives only a round trip later, and the next request on this node
   * must see the write at once. Not for quiet transactions.
   *
   * `connection`: the pooled connection whose COMMIT (or autocommitted statement) just answered,
   * called before it is released, so that the commit's own notification does not move the version
   * again. Without it (the outcome unknown, or the caller not database.ts), the notification counts.
   */
  localCommit(connection?: pg.ClientBase): void {
    this.#counter++;
    if (connection !== undefined) this.#own.counted(connection, performance.now());
  }

  /** `connection`'s current checkout notifies nothing (a read, a snapshot, a quiet transaction): called before it sends anything. */
  notifiesNothing(connection: pg.ClientBase): void {
    this.#own.silent(connection);
  }

  // refresh and refreshUnlessWithin are no-ops: on SQLite they decide when to ask the database
  // again, because nothing tells a connection about other connections' commits. Here the server
  // pushes every commit as it happens, so there is nothing to ask at the start of a unit of work:
  // asking anyway would cost a round trip per request and still not order this node's read after
  // another node's commit any better than the notification's own delivery.
  refresh(): void {}

  refreshUnlessWithin(_maxAgeMs: number): void {}

  /** Calls `listener` with the table's name on every notification; returns the function that stops it. */
  onChange(listener: (table: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    if (this.#retry !== undefined) {
      clearTimeout(this.#retry.timer);
      this.#retry.wake();
    }
    const clients = [this.#client, this.#opening];
    this.#client = undefined;
    await Promise.all(clients.map((client) => client?.end()));
  }

  async #open(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.url,
      application_name: this.options.applicationName,
      // Keep-alive probes stop a NAT or load balancer from dropping the connection while nothing is
      // written; the heartbeat, not TCP, is what notices a dead one.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      connectionTimeoutMillis: 10_000,
    });
    client.on("error", (error) => this.#lost(client, error));
    client.on("end", () => this.#lost(client, new Error("the change listener's connection ended")));
    client.on("notification", (message) => this.#notified(message));
    this.#opening = client;
    try {
      const sentAt = performance.now();
      await client.connect();
      await client.query(`LISTEN ${CHANGES_CHANNEL}`);
      if (this.#closed) throw new Error("the change watch was closed while connecting");
      this.#client = client;
      this.#heardAt = sentAt;
    } catch (error) {
      await client.end();
      throw error;
    } finally {
      this.#opening = undefined;
    }
  }

  #notified(message: pg.Notification): void {
    if (message.channel !== CHANGES_CHANNEL) return;
    const table = message.payload ?? "";
    // Counted even from a listener connection already given up on: one needless miss more, never
    // one less. Not counted: tables no cache reads, and this node's own commits counted already.
    if (!TABLES_NO_CACHE_READS.has(table) && !this.#own.countedAlready(message.processId, performance.now())) {
      this.#counter++;
    }
    for (const listener of this.#listeners) {
      try {
        listener(table);
      } catch (error) {
        this.#report(error);
      }
    }
  }

  #lost(client: pg.Client, error: Error): void {
    if (client !== this.#client) return; // already given up on, or never listening
    this.#client = undefined;
    this.#wasTrusted = false;
    this.#beatSentAt = undefined;
    this.#report(error);
    void client.end(); // pg destroys the socket when a query is outstanding (a hung heartbeat)
    void this.#reconnect();
  }

  async #reconnect(): Promise<void> {
    for (let delay = FIRST_RETRY_MS; !this.#closed; delay = Math.min(delay * 2, LONGEST_RETRY_MS)) {
      await new Promise<void>((wake) => {
        this.#retry = { timer: setTimeout(wake, delay), wake };
      });
      this.#retry = undefined;
      if (this.#closed) return;
      try {
        await this.#open();
        return;
      } catch (error) {
        if (!this.#closed) this.#report(error);
      }
    }
  }

  /**
   * A heartbeat's answer shows that everything the server sent before it (notifications come on
   * the same connection, in order) has arrived. One that stays unanswered longer than an answer
   * vouches means the connection is presumed dead: it is dropped and opened again.
   */
  #beat(): void {
    const client = this.#client;
    if (client === undefined) return;
    const now = performance.now();
    if (this.#beatSentAt !== undefined) {
      if (now - this.#beatSentAt > this.#trustForMs) {
        this.#lost(client, new Error(`the change listener's heartbeat went unanswered for ${this.#trustForMs} ms`));
      }
      return;
    }
    this.#beatSentAt = now;
    const answered = (ok: boolean) => {
      if (this.#beatSentAt === now) this.#beatSentAt = undefined;
      if (ok && client === this.#client) {
        this.#heardAt = now;
        this.#own.heardUpTo(now);
      }
    };
    // A failed heartbeat needs nothing here: the connection's own 'error' or 'end' follows.
    client.query("SELECT 1").then(
      () => answered(true),
      () => answered(false),
    );
  }

  #report(error: unknown): void {
    this.options.onError?.(error instanceof Error ? error : new Error(String(error)));
  }
}

/**
 * Marks the caller's open transaction quiet: its writes notify no node (migrations/postgres/0002).
 * Only for writes no cache depends on (download counters, last-used times); it lasts until the
 * transaction ends, so it never leaks to the next user of a pooled connection. Outside a
 * transaction it would last for this one statement only, so it refuses to run there.
 */
export async function markQuiet(client: pg.ClientBase): Promise<void> {
  // As the server last reported it: 'I' idle, outside any transaction.
  if (client.getTransactionStatus() === "I") throw new Error("markQuiet needs an open transaction (BEGIN first)");
  await client.query("SELECT set_config('wharf.quiet', 'on', true)");
}
