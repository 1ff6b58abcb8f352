import pg from "pg";
import { WHARF_LOCK_SPACE } from "./advisory-locks.js";

/**
 * Background work that must run on one node of a cluster at a time (routine configuration checks,
 * connector health, retention, blob GC, schedulers) is led by whichever node holds
 * `pg_try_advisory_lock(WHARF_LOCK_SPACE, key)` on a session of its own. PostgreSQL releases a
 * session lock only when the session ends: on `pg_advisory_unlock`, on a clean disconnect, when the
 * node's process dies (its kernel closes the TCP connection), on `pg_terminate_backend`, or - when
 * the node is cut off rather than gone - once the server's TCP keepalive or user timeout gives up
 * on the silent connection.
 *
 * The rule everything here follows: losing early is safe (at worst the work pauses until some node
 * takes the lock again), keeping on working under a lock this node may no longer hold is not. So
 * the leader checks its session every `checkMs`, and on any error, a check that takes longer than
 * `checkTimeoutMs`, or the connection's 'error'/'end' event, it calls `onLose` at once, before
 * anything else (before reconnecting, before trying the lock again).
 *
 * A partitioned leader cannot be told that it lost: the server drops its session only after the
 * keepalive window below, and the node hears nothing at all. It stops on its own, when its next
 * check times out (within checkMs + checkTimeoutMs of the partition), and the server is told to
 * wait clearly longer than that (about twice as long, at least 25 s) before it releases the lock
 * to another node. This is a lease without fencing tokens: a leader whose event loop stalls for
 * longer than that margin could still overlap briefly with the next, so the work done under a
 * leadership must tolerate that (blob GC's grace period, idempotent retention) rather than assume
 * perfect exclusion.
 */
export interface LeadershipOptions {
  readonly url: string;
  /** The work this lease is for ("blob-gc"): in application_name, so operators see who leads what. */
  readonly name: string;
  /** The purpose's key in ADVISORY_LOCKS. */
  readonly key: number;
  /** This node's id (cluster-nodes.ts defaultNodeId()). */
  readonly nodeId: string;
  /** How often a node that does not lead tries to take the lock, and waits before reconnecting (default 5 s). */
  readonly retryMs?: number;
  /** How often the leader checks that its session is still there (default 5 s). */
  readonly checkMs?: number;
  /** How long a check (or a try for the lock) may take before the session is given up (default 3 s). */
  readonly checkTimeoutMs?: number;
  /** This node now leads. The signal aborts when it stops leading, so the work can stop with it. */
  readonly onGain?: (signal: AbortSignal) => void | Promise<void>;
  /**
   * This node no longer leads (or may not: it cannot tell). Called at once when the session is in
   * doubt; from close(), awaited before the lock is released, so the work stops before another
   * node can start it.
   */
  readonly onLose?: () => void | Promise<void>;
  /** Connection failures and errors thrown by onGain/onLose: reported here, never thrown. */
  readonly onError?: (error: Error) => void;
}

export interface Leadership {
  /** Starts trying for the lock in the background; returns at once. */
  start(): void;
  /** Whether this node leads now (false as soon as its session is in doubt). */
  isLeader(): boolean;
  /** Stops leading (onLose first, awaited), releases the lock and ends the session. */
  close(): Promise<void>;
}

const DEFAULT_RETRY_MS = 5_000;
const DEFAULT_CHECK_MS = 5_000;
const DEFAULT_CHECK_TIMEOUT_MS = 3_000;
/** Longest wait for a goodbye on close(); a cut-off server would otherwise keep close() waiting. */
const END_TIMEOUT_MS = 2_000;
/** PostgreSQL truncates application_name to 63 bytes (NAMEDATALEN - 1). */
const APPLICATION_NAME_BYTES = 63;

/** `wharf <node> lease:<name>`, as pg_stat_activity shows the session. */
export function leaseApplicationName(nodeId: string, name: string): string {
  const full = `wharf ${nodeId} lease:${name}`;
  const bytes = Buffer.from(full);
  return bytes.length <= APPLICATION_NAME_BYTES ? full : bytes.subarray(0, APPLICATION_NAME_BYTES).toString();
}

/**
 * How long the server keeps the session of a silent node (and so its lock): keepalive probes after
 * `idle` seconds without traffic, then `count` probes `interval` seconds apart, and the same bound
 * (tcp_user_timeout, PostgreSQL 12+) for replies the node never acknowledges - without it a reply
 * lost in the partition would be retransmitted for ~15 minutes before the server gave up.
 * Twice the time the leader needs to notice on its own, so the old leader has stopped first.
 */
function serverKeepalive(checkMs: number, checkTimeoutMs: number): string {
  const idle = Math.max(10, Math.ceil((2 * (checkMs + checkTimeoutMs)) / 1000));
  const interval = 5;
  const count = 3;
  const userTimeoutMs = (idle + interval * count) * 1000;
  return [
    `-c tcp_keepalives_idle=${idle}`,
    `-c tcp_keepalives_interval=${interval}`,
    `-c tcp_keepalives_count=${count}`,
    `-c tcp_user_timeout=${userTimeoutMs}`,
  ].join(" ");
}

interface Session {
  readonly client: pg.Client;
  /** Set once the connection is up (until then, close() cuts the attempt short). */
  connected: boolean;
  /** Set once the connection failed or ended: it is never used again. */
  lost: boolean;
}

/**
 * Drops a connection at once, without the goodbye that a cut-off server would never answer.
 * pg has no public way to do this: end() waits for the server to close the connection and does
 * not abort a connection attempt. Its socket has been `client.connection.stream` for many majors;
 * should that change, end() is the fallback.
 */
function dropConnection(client: pg.Client): void {
  const stream = (client as unknown as { connection?: { stream?: { destroy?: () => void } } }).connection?.stream;
  if (typeof stream?.destroy === "function") stream.destroy();
  else client.end().catch(() => {});
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

export function createLeadership(options: LeadershipOptions): Leadership {
  const retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
  const checkMs = options.checkMs ?? DEFAULT_CHECK_MS;
  const checkTimeoutMs = options.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  const applicationName = leaseApplicationName(options.nodeId, options.name);

  let closed = false;
  let current: Session | undefined;
  /** Present exactly while this node leads. */
  let leading: AbortController | undefined;
  let loop: Promise<void> | undefined;
  /** Ends the pause the loop is in (close() and a lost session should not wait for a timer). */
  let wakeUp: () => void = () => {};

  const report = (error: unknown) => {
    try {
      options.onError?.(asError(error));
    } catch {
      // A failing error handler must not take the process down either.
    }
  };

  /** Runs a callback, reporting what it throws or rejects with; its synchronous part runs at once. */
  async function callSafely(callback: () => void | Promise<void>): Promise<void> {
    try {
      await callback();
    } catch (error) {
      report(error);
    }
  }

  function gain(): void {
    const controller = new AbortController();
    leading = controller;
    void callSafely(() => options.onGain?.(controller.signal));
  }

  function lose(): Promise<void> {
    const controller = leading;
    if (controller === undefined) return Promise.resolve();
    leading = undefined;
    controller.abort();
    return callSafely(() => options.onLose?.());
  }

  function pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wakeUp = () => {};
        resolve();
      };
      const timer = setTimeout(done, ms);
      // The lease never keeps a process alive by itself; its connection does while there is one.
      timer.unref();
      wakeUp = done;
    });
  }

  function openSession(): Session {
    const client = new pg.Client({
      connectionString: options.url,
      application_name: applicationName,
      keepAlive: true,
      keepAliveInitialDelayMillis: checkMs,
      connectionTimeoutMillis: Math.max(checkTimeoutMs, 5_000),
      query_timeout: checkTimeoutMs,
      options: serverKeepalive(checkMs, checkTimeoutMs),
    });
    const session: Session = { client, connected: false, lost: false };
    const gone = (error?: Error) => {
      if (session.lost) return;
      session.lost = true;
      if (closed) return;
      if (error !== undefined) report(error);
      if (session !== current) return;
      void lose();
      wakeUp();
    };
    // Listening to 'error' for the client's whole life is what keeps a dropped connection from
    // being an unhandled 'error' event that ends the process.
    client.on("error", (error) => gone(error));
    client.on("end", () => gone());
    return session;
  }

  /** Ends a session in doubt without waiting for a server that may not answer. */
  function discard(session: Session): void {
    session.lost = true;
    dropConnection(session.client);
  }

  async function tryLock(client: pg.Client): Promise<boolean> {
    const result = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1, $2) AS locked", [
      WHARF_LOCK_SPACE,
      options.key,
    ]);
    return result.rows[0]?.locked === true;
  }

  async function run(): Promise<void> {
    while (!closed) {
      const session = openSession();
      current = session;
      try {
        await session.client.connect();
        session.connected = true;
        while (!closed && !session.lost) {
          if (leading === undefined) {
            const locked = await tryLock(session.client);
            // A lock taken while close() began is released with the session when close() ends it.
            if (locked && !closed && !session.lost) gain();
          } else {
            await session.client.query("SELECT 1");
          }
          if (closed || session.lost) break;
          await pause(leading === undefined ? retryMs : checkMs);
        }
      } catch (error) {
        // A connection's 'error' event has reported it already.
        if (!closed && !session.lost) report(error);
      }
      if (closed) return;
      // Whatever went wrong, the lock is in doubt: stop leading first, then start a new session.
      void lose();
      discard(session);
      await pause(retryMs);
    }
  }

  /** Releases the lock, if held, and says goodbye; a server that does not answer is not waited for long. */
  async function endSession(session: Session, wasLeader: boolean): Promise<void> {
    if (!session.lost && wasLeader) {
      try {
        await session.client.query("SELECT pg_advisory_unlock($1, $2)", [WHARF_LOCK_SPACE, options.key]);
      } catch (error) {
        // Ending the session below releases the lock as well.
        report(error);
      }
    }
    if (session.lost) return;
    session.lost = true;
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      session.client.end().then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), END_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!ended) dropConnection(session.client);
  }

  return {
    start() {
      if (loop !== undefined || closed) return;
      loop = run().catch(report);
    },
    isLeader() {
      return leading !== undefined;
    },
    async close() {
      if (closed) return;
      closed = true;
      const wasLeader = leading !== undefined;
      wakeUp();
      // The work stops before the lock is released, so that no other node starts it alongside.
      await lose();
      const session = current;
      // A connection attempt is cut short; a query in flight ends within checkTimeoutMs.
      if (session !== undefined && !session.connected) discard(session);
      await loop;
      if (session !== undefined) await endSession(session, wasLeader);
    },
  };
}
