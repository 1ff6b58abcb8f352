import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { DomainError } from "../../domain/errors.js";
import type { LogLevel } from "../../drift/model.js";
import { NODE_HEARTBEAT_MS } from "../../storage/postgres/cluster-nodes.js";
import { retryWhileBusy } from "../../storage/busy.js";
import { isPostgres, type MetadataDb } from "../../storage/metadata-db.js";
import type { Collection, CollectionsRepository } from "./collections-repository.js";
import { desiredStateOf } from "./desired-state.js";
import type { InfrastructureRepository, ServerSummary } from "./infrastructure-repository.js";
import type { ServerTransport } from "./transport.js";

/**
 * Checks (issue 13 section 2; research next-areas.md 1.5.5): a check of a server creates an
 * `executing` collection, hands the server's desired items to its transport, stores what each item
 * is found to be with the counts, and ends `completed`, or `error` with the reason when the server
 * cannot be reached at all (per-item troubles make that item `unknown`, not the check fail).
 *
 * Never twice at once for one server: a request while one runs joins it (in this process by its
 * promise; the unique index on executing collections stops another process, whose check is then
 * waited for). At most WHARF_CONFIG_CHECK... configCheckConcurrency run at once (the checks a
 * remediation job makes are limited by the job kind's own limit instead). Routine checks of every
 * active server whose drift mode is not `none` every configCheckIntervalMs (0: none), jittered, a
 * server checked within the last half interval skipped. Each server keeps its last KEEP_COLLECTIONS.
 *
 * Restart rule: a collection whose process is gone ends `error` saying so; left executing, every
 * later check of its server would wait for it for good. On one machine the rule runs at start: every
 * executing collection was left by a process that stopped. In cluster mode (PostgreSQL) it runs on
 * the leading node, at takeover and every ORPHAN_SWEEP_MS after (a node may die while another
 * leads), and ends only the checks of nodes that are gone (collections-repository-postgres.ts):
 * other live nodes' checks go on.
 *
 * A server with drift mode `automaticallyRemediate` whose check (not a remediation job's own) finds
 * drift is handed to `onDrift` (the remediation module enqueues a job unless one is pending or
 * running for it).
 */
export const RESTART_TEXT = "The Wharf process stopped during this check.";
export const KEEP_COLLECTIONS = 20;
/** How often a check waits for one that another process runs on the same server. */
const FOREIGN_POLL_MS = 250;
/**
 * Cluster mode: how often the leader applies the restart rule again. A dead node's checks end
 * within this and the rule's own bound (NODE_GONE_AFTER_MS) of its last heartbeat.
 */
export const ORPHAN_SWEEP_MS = NODE_HEARTBEAT_MS;

export interface CheckerLogger {
  debug?(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface CheckOptions {
  /** The remediation job this check belongs to (config_collections.job_id); bypasses the concurrency limit. */
  readonly jobId?: number;
  /** Start a check after any running one ends instead of joining it (a remediation's closing check). */
  readonly fresh?: boolean;
  readonly signal?: AbortSignal;
  /** Where the engine's lines go (a job's log); default: the process log at debug level. */
  readonly log?: (level: LogLevel, message: string) => void;
}

export interface Checker {
  /**
   * Applies the restart rule (in cluster mode, again every ORPHAN_SWEEP_MS) and starts the routine
   * checks. In cluster mode only the leading node schedules, and it may lose and regain the lead:
   * start() after stop() schedules again.
   */
  start(): Promise<void>;
  /** Stops the scheduling start() began (the rule, routine checks); checks already running go on, and new ones run. */
  stop(): Promise<void>;
  /** For good (the app is closing): stops scheduling, aborts running checks (they end `error`) and waits for them to be recorded. */
  close(): Promise<void>;
  /**
   * Checks the server (or joins the check already running); resolves with the ended collection,
   * undefined for a deleted or inactive server. Never rejects for an unreachable server: that
   * collection ends `error`. Rejects (unavailable) when stopping or `signal` aborted before it began.
   */
  check(serverId: number, options?: CheckOptions): Promise<Collection | undefined>;
  /** Starts checks of these servers in the background (the API's `check`). */
  request(serverIds: readonly number[]): void;
}

export interface CheckerDeps {
  /** SQLite: writes wait while another process holds its write lock. PostgreSQL: rows lock, writes just run. */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Pick<Config, "configCheckIntervalMs" | "configCheckConcurrency">;
  readonly infrastructure: InfrastructureRepository;
  readonly collections: CollectionsRepository;
  readonly transportOf: (server: ServerSummary) => ServerTransport;
  readonly log: CheckerLogger;
  readonly onDrift?: (server: ServerSummary, collection: Collection) => void | Promise<void>;
  /** Random in [0, 1) for the jitter; tests pin it. */
  readonly random?: () => number;
}

const stopped = () => new DomainError("unavailable", "CHECK_NOT_RUN", "The check did not run: Wharf is stopping.");
const message = (error: unknown) => (error instanceof Error ? error.message || error.name : String(error));

/** A counting semaphore: acquire() resolves with the release of one slot. */
function slots(count: number) {
  let free = Math.max(1, count);
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else free += 1;
  };
  return {
    acquire(): Promise<() => void> {
      if (free > 0) {
        free -= 1;
        return Promise.resolve(release);
      }
      return new Promise((resolve) => waiting.push(() => resolve(release)));
    },
  };
}

export function createChecker(deps: CheckerDeps): Checker {
  const { db, clock, config, infrastructure, collections, log } = deps;
  const random = deps.random ?? Math.random;
  const now = () => clock.now().toISOString();
  const write = <T>(fn: () => Promise<T>): Promise<T> =>
    isPostgres(db) ? fn() : retryWhileBusy(db, fn, Number.POSITIVE_INFINITY);
  const pool = slots(config.configCheckConcurrency);
  const inFlight = new Map<number, Promise<Collection | undefined>>();
  const stopping = new AbortController();
  /** Scheduling (the rule, routine checks): on while started; closed is for good, checks included. */
  let state: "idle" | "started" | "closed" = "idle";
  /** How many times start() began scheduling. */
  let rounds = 0;
  let timer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  /** The restart rule in progress: stop() waits for it, so that it does not outlive the leadership. */
  let sweeping: Promise<void> = Promise.resolve();

  const processLog = (server: ServerSummary) => (level: LogLevel, text: string) => {
    const fields = { server: server.name };
    if (level === "error") log.error(fields, text);
    else if (level === "warn") log.warn(fields, text);
    else log.debug?.(fields, text);
  };

  /** Waits while another process checks the server; its collection once it ended. */
  async function awaitForeign(serverId: number, signal: AbortSignal): Promise<Collection | undefined> {
    for (;;) {
      const executing = await collections.executingOf(serverId);
      if (executing === undefined) return collections.latestOf(serverId);
      if (signal.aborted) return executing;
      await new Promise((resolve) => setTimeout(resolve, FOREIGN_POLL_MS));
    }
  }

  async function run(serverId: number, options: CheckOptions): Promise<Collection | undefined> {
    const server = await infrastructure.getServer(serverId);
    if (server === undefined || !server.active) return undefined;
    const signal = options.signal ? AbortSignal.any([stopping.signal, options.signal]) : stopping.signal;
    const release = options.jobId === undefined ? await pool.acquire() : () => undefined;
    try {
      // Stopping (or the job was canceled): a remediation must not take "no check" for "nothing to do".
      if (signal.aborted) throw stopped();
      let id = await write(() => collections.begin(serverId, options.jobId, now()));
      while (id === undefined) {
        const foreign = await awaitForeign(serverId, signal);
        if (!options.fresh || signal.aborted) return foreign;
        id = await write(() => collections.begin(serverId, options.jobId, now()));
      }
      await collect(server, id, signal, options.log ?? processLog(server));
      await write(() => collections.prune(serverId, KEEP_COLLECTIONS));
      const ended = await collections.get(id);
      if (ended?.status === "completed" && ended.drifted > 0 && options.jobId === undefined) {
        const current = await infrastructure.getServer(serverId);
        if (current?.active && current.driftMode === "automaticallyRemediate" && deps.onDrift) {
          await Promise.resolve(deps.onDrift(current, ended)).catch((error: unknown) =>
            log.error({ server: server.name, err: error }, "could not start the automatic remediation"),
          );
        }
      }
      return ended;
    } finally {
      release();
    }
  }

  async function collect(
    server: ServerSummary,
    id: number,
    signal: AbortSignal,
    lineOut: (level: LogLevel, text: string) => void,
  ): Promise<void> {
    try {
      const desired = await desiredStateOf(infrastructure, server.id, (text) => lineOut("info", text));
      const roleIds = new Map(desired.roles.map((role) => [role.name.toLowerCase(), role.id]));
      const results = await deps
        .transportOf(server)
        .check(server, desired.items, { variables: desired.variables, signal, log: lineOut });
      signal.throwIfAborted();
      await write(() => collections.complete(id, now(), results, roleIds));
    } catch (error) {
      const text = stopping.signal.aborted ? RESTART_TEXT : message(error);
      await write(() => collections.fail(id, now(), text));
    }
  }

  function check(serverId: number, options: CheckOptions = {}): Promise<Collection | undefined> {
    const existing = inFlight.get(serverId);
    if (existing !== undefined) {
      if (!options.fresh) return existing;
      // A check that had started before this call may have missed changes the caller just made.
      return existing.then(
        () => check(serverId, { ...options, fresh: false }),
        () => check(serverId, { ...options, fresh: false }),
      );
    }
    const started = run(serverId, options).finally(() => {
      if (inFlight.get(serverId) === started) inFlight.delete(serverId);
    });
    inFlight.set(serverId, started);
    return started;
  }

  function request(serverIds: readonly number[]): void {
    if (state === "closed") return;
    for (const id of serverIds) {
      check(id).catch((error: unknown) => {
        if (state !== "closed") log.error({ serverId: id, err: error }, "a configuration check failed");
      });
    }
  }

  async function routine(): Promise<void> {
    const interval = config.configCheckIntervalMs;
    const recent = clock.now().getTime() - interval / 2;
    const due: number[] = [];
    for (const server of await infrastructure.listServers()) {
      if (!server.active || server.driftMode === "none") continue;
      const latest = await collections.latestOf(server.id);
      if (latest === undefined || Date.parse(latest.startedAt) < recent) due.push(server.id);
    }
    request(due);
  }

  function schedule(delay: number): void {
    timer = setTimeout(() => {
      routine().catch((error: unknown) => {
        log.error({ err: error }, "could not start the routine configuration checks");
      });
      if (state === "started") schedule(config.configCheckIntervalMs * (0.9 + 0.2 * random()));
    }, delay).unref();
  }

  async function endOrphaned(): Promise<void> {
    const ended = await write(() => collections.endOrphaned(now(), RESTART_TEXT));
    if (ended > 0) log.warn({ collections: ended }, "configuration checks interrupted by a stop ended in error");
  }

  /**
   * Cluster mode: the rule again after each interval, one run at a time, while the start() that
   * began it lasts (`round`: a run that ends after a stop and a new start does not begin a second loop).
   */
  function scheduleSweep(round: number): void {
    sweepTimer = setTimeout(() => {
      sweeping = endOrphaned()
        .catch((error: unknown) => log.error({ err: error }, "could not end the checks of stopped nodes"))
        .finally(() => {
          if (state === "started" && round === rounds) scheduleSweep(round);
        });
    }, ORPHAN_SWEEP_MS).unref();
  }

  async function stopScheduling(): Promise<void> {
    clearTimeout(timer);
    clearTimeout(sweepTimer);
    // The rule in progress ends before another node may start its own.
    await sweeping.catch(() => undefined);
  }

  return {
    async start() {
      if (state !== "idle") return;
      state = "started";
      rounds += 1;
      // Scheduled first: a rule that fails now is tried again on time.
      if (isPostgres(db)) scheduleSweep(rounds);
      sweeping = endOrphaned();
      await sweeping;
      // The first round somewhere within the first interval, so that many processes do not all check at once.
      if (config.configCheckIntervalMs > 0 && state === "started") schedule(config.configCheckIntervalMs * random());
    },
    async stop() {
      if (state !== "started") return;
      state = "idle";
      await stopScheduling();
    },
    async close() {
      if (state === "closed") return;
      state = "closed";
      await stopScheduling();
      stopping.abort();
      await Promise.allSettled([...inFlight.values()]);
    },
    check,
    request,
  };
}
