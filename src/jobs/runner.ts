/**
 * The persistent job runner (docs/PRODUCT.md "How the delivery half becomes real"; issue 6 section 1).
 * Jobs are rows (migrations/0009-jobs.sql) moving pending -> executing -> succeeded | warned |
 * failed; log lines are written as they happen. Restart rule: a job found executing when a runner
 * starts was interrupted by a dead process, so it ends failed with a log line saying so, and is
 * never run again (a half-done deployment must not silently run twice); pending jobs still run.
 *
 * One runner per database: the restart rule takes every executing row for an orphan. app.ts
 * creates it; each area adds the job kinds it runs with handle() (deployments, configuration
 * remediations), each with its own limit of jobs executing at once.
 */
import type { Clock } from "../domain/clock.js";
import { DomainError, invalid, notFound } from "../domain/errors.js";
import { isBusy, retryWhileBusy } from "../storage/busy.js";
import type { Db } from "../storage/database.js";

export type JobStatus = "pending" | "executing" | "succeeded" | "warned" | "failed";
export type JobOutcome = "succeeded" | "warned" | "failed";
export type JobLogLevel = "debug" | "info" | "warn" | "error";

export interface Job {
  readonly id: number;
  readonly kind: string;
  /** The JSON value given to enqueue, parsed again. */
  readonly payload: unknown;
  readonly status: JobStatus;
  readonly createdAt: Date;
  readonly startedAt: Date | undefined;
  readonly endedAt: Date | undefined;
  /** Set when cancel() ended the job; its status is then failed. */
  readonly canceledAt: Date | undefined;
  /** Not taken before this instant. */
  readonly notBefore: Date | undefined;
  readonly attempts: number;
}

export interface JobLogLine {
  readonly level: JobLogLevel;
  readonly message: string;
  readonly loggedAt: Date;
}

export interface JobContext {
  /** Aborted when the job is canceled, or when stop() gives up waiting for it. */
  readonly signal: AbortSignal;
  /** Persists one line at once (not buffered). Lines logged after the handler settled are dropped. */
  log(level: JobLogLevel, message: string): void;
}

/**
 * Runs one job. Resolving with an outcome records it; throwing (or resolving with anything else)
 * records failed with the error's message in the job's log.
 */
export type JobHandler = (job: Job, context: JobContext) => Promise<JobOutcome>;

/** Pino-shaped (app.log fits); for the runner's own troubles, not for job logs. */
export interface JobRunnerLogger {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface JobRunnerOptions {
  readonly db: Db;
  readonly clock: Clock;
  /** Jobs executing at once, of all kinds (a positive integer). */
  readonly concurrency: number;
  /** Handlers known from the start, with no limit but `concurrency`; more come through handle(). */
  readonly handlers?: Readonly<Record<string, JobHandler>>;
  readonly log: JobRunnerLogger;
  /**
   * Called once per job that reached a final status (including jobs the restart rule or cancel()
   * ended), after the status is stored; its failures are logged and do not change the job.
   */
  readonly onFinished?: (job: Job) => void | Promise<void>;
  /** How long stop() waits for executing jobs; default 30 s. */
  readonly stopTimeoutMs?: number;
  /**
   * While idle, looks for due jobs at least this often: jobs that other processes on the same
   * database enqueued (the CLI's remediations), which this runner hears nothing about. Default:
   * only its own enqueues and deferred jobs wake it.
   */
  readonly pollMs?: number;
}

/** What an area says about one kind of job it adds to the runner (JobRunner.handle). */
export interface JobKindOptions {
  /**
   * Jobs of this kind executing at once (a non-negative integer; default: the runner's own
   * limit). 0: this process runs none, they wait (deployments with WHARF_DEPLOY_CONCURRENCY=0).
   */
  readonly concurrency?: number;
  /** Like JobRunnerOptions.onFinished, for jobs of this kind; called after that one. */
  readonly onFinished?: (job: Job) => void | Promise<void>;
}

export interface JobRunner {
  /**
   * Adds the handler of a job kind: each area contributes its own to the one runner of the
   * database. Before start() only (the restart rule needs every kind's onFinished); a kind is
   * handled once.
   */
  handle(kind: string, handler: JobHandler, options?: JobKindOptions): void;
  /**
   * Stores a pending job and returns its id; it runs once the runner is started, there is room
   * and `notBefore` (if given) has passed. invalid for a kind without a handler.
   */
  enqueue(kind: string, payload: unknown, options?: { readonly notBefore?: Date }): Promise<number>;
  findJob(id: number): Promise<Job | undefined>;
  /** Log lines in the order they were written; not_found for an unknown job. */
  readLog(id: number): Promise<JobLogLine[]>;
  /**
   * Applies the restart rule, then takes pending jobs oldest first. Call once, before which
   * enqueued jobs only wait.
   */
  start(): Promise<void>;
  /**
   * Takes no more jobs and waits up to stopTimeoutMs for the executing ones. Those still running
   * then are aborted and left executing in the database, for the next start's restart rule; their
   * late results are not recorded.
   */
  stop(): Promise<void>;
  /**
   * Ends a pending job (failed, canceled, never started) or aborts an executing one (it ends
   * failed, canceled, once its handler returns). False when the job had already ended;
   * not_found for an unknown job.
   */
  cancel(id: number): Promise<boolean>;
}

/** A row of `jobs` as both databases give it (PostgreSQL's bigints read as numbers). */
export interface JobRow {
  id: number;
  kind: string;
  payload: string;
  status: JobStatus;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  canceled_at: string | null;
  not_before: string | null;
  attempts: number;
}

/** A job log line as stored: level, message, logged at. */
type LogLine = [JobLogLevel, string, string];

interface Running {
  readonly kind: string;
  readonly controller: AbortController;
  done: Promise<void>;
  canceled: boolean;
  /** Set when stop() gave up on it: nothing more is written for it. */
  abandoned: boolean;
}

const MAX_LOG_MESSAGE = 64 * 1024;
export const MAX_WAKE_DELAY_MS = 60_000;
/** How soon a runner that found another process holding the write lock looks for jobs again. */
const BUSY_RETRY_MS = 250;
const OUTCOMES: ReadonlySet<string> = new Set<JobOutcome>(["succeeded", "warned", "failed"]);
export const INTERRUPTED_MESSAGE = "The Wharf process stopped while this job was executing; it did not finish.";

/** Lines the runner itself writes in a job's log (on either database). */
export const CANCELED_BEFORE_START_MESSAGE = "The job was canceled before it started.";
export const CANCEL_REQUESTED_MESSAGE = "Cancel requested.";
export const CANCELED_WHILE_EXECUTING_MESSAGE = "The job was canceled while it was executing.";
export const CANCELED_NOWHERE_MESSAGE = "The job was canceled; it was not executing anywhere.";

const date = (text: string | null) => (text === null ? undefined : new Date(text));
export const toJob = (row: JobRow): Job => ({
  id: row.id,
  kind: row.kind,
  payload: JSON.parse(row.payload) as unknown,
  status: row.status,
  createdAt: new Date(row.created_at),
  startedAt: date(row.started_at),
  endedAt: date(row.ended_at),
  canceledAt: date(row.canceled_at),
  notBefore: date(row.not_before),
  attempts: row.attempts,
});

const errorMessage = (error: unknown) =>
  error instanceof Error ? error.message || error.name : `Non-error value thrown: ${String(error)}`;

/** A log message as stored: cut at 64 KiB. */
export const truncateLogMessage = (message: string) =>
  message.length > MAX_LOG_MESSAGE ? `${message.slice(0, MAX_LOG_MESSAGE)}… (truncated)` : message;

/** handle()'s checks: before start() only, once per kind, a non-negative integer limit. */
export function checkNewKind(
  kind: string,
  started: boolean,
  handlers: ReadonlyMap<string, JobHandler>,
  kindOptions: JobKindOptions,
): void {
  if (started) throw new Error(`The job kind "${kind}" is added after the job runner started.`);
  if (handlers.has(kind)) throw new Error(`The job kind "${kind}" already has a handler.`);
  const { concurrency } = kindOptions;
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 0)) {
    throw new RangeError(`The concurrency of "${kind}" jobs must be a non-negative integer.`);
  }
}

/** enqueue()'s checks; the payload as stored JSON and the start time as stored text. */
export function checkNewJob(
  handlers: ReadonlyMap<string, JobHandler>,
  kind: string,
  payload: unknown,
  notBefore: Date | undefined,
): { json: string; notBefore: string | null } {
  if (!handlers.has(kind)) {
    throw invalid("JOB_KIND_UNKNOWN", `There is no handler for jobs of kind "${kind}".`);
  }
  const json = JSON.stringify(payload) as string | undefined;
  if (json === undefined) throw invalid("JOB_PAYLOAD_INVALID", "A job's payload must be a JSON value.");
  if (notBefore !== undefined && Number.isNaN(notBefore.getTime())) {
    throw invalid("JOB_NOT_BEFORE_INVALID", "A job's start time must be a valid date.");
  }
  return { json, notBefore: notBefore?.toISOString() ?? null };
}

/** Kinds whose own limit is reached by the given executing jobs: their due jobs wait, the others' do not. */
export function saturatedKindsOf(
  executing: Iterable<{ readonly kind: string }>,
  kinds: ReadonlyMap<string, JobKindOptions>,
): string[] {
  const busy = new Map<string, number>();
  for (const entry of executing) busy.set(entry.kind, (busy.get(entry.kind) ?? 0) + 1);
  const full: string[] = [];
  for (const [kind, { concurrency }] of kinds) {
    if (concurrency !== undefined && (busy.get(kind) ?? 0) >= concurrency) full.push(kind);
  }
  return full;
}

/**
 * Runs the job's handler: its outcome, or failed (with a line in the job's log saying why) when
 * there is no handler, it throws or it resolves with something else.
 */
export async function runHandler(handler: JobHandler | undefined, job: Job, context: JobContext): Promise<JobOutcome> {
  let outcome: JobOutcome = "failed";
  try {
    if (handler === undefined) {
      context.log("error", `No handler is registered for jobs of kind "${job.kind}".`);
    } else {
      const result: unknown = await handler(job, context);
      if (typeof result === "string" && OUTCOMES.has(result)) outcome = result as JobOutcome;
      else context.log("error", `The job's handler returned ${JSON.stringify(result) ?? "nothing"}, not an outcome.`);
    }
  } catch (error) {
    context.log("error", errorMessage(error));
  }
  return outcome;
}

/** The final status of a job whose handler settled, and the line that ends its log. */
export function endingOf(outcome: JobOutcome, canceled: boolean): [JobOutcome, [JobLogLevel, string]] {
  // A canceled job is failed even if its handler finished anyway: someone asked for it not to be.
  const final = canceled ? "failed" : outcome;
  const line: [JobLogLevel, string] = canceled
    ? ["error", CANCELED_WHILE_EXECUTING_MESSAGE]
    : [final === "failed" ? "error" : final === "warned" ? "warn" : "info", `The job ended: ${final}.`];
  return [final, line];
}

/** Calls the runner's onFinished, then the kind's; their failures are logged, never thrown. */
export async function notifyFinished(
  job: Job,
  callbacks: readonly (((job: Job) => void | Promise<void>) | undefined)[],
  log: JobRunnerLogger,
): Promise<void> {
  for (const onFinished of callbacks) {
    try {
      await onFinished?.(job);
    } catch (error) {
      log.error({ jobId: job.id, err: error }, "a job's onFinished callback failed");
    }
  }
}

export function createJobRunner(options: JobRunnerOptions): JobRunner {
  const { db, clock, log } = options;
  const handlers = new Map<string, JobHandler>(Object.entries(options.handlers ?? {}));
  const kinds = new Map<string, JobKindOptions>();
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
    throw new RangeError("concurrency must be a positive integer");
  }
  const stopTimeoutMs = options.stopTimeoutMs ?? 30_000;
  const now = () => clock.now().toISOString();

  const sql = {
    insert: db.prepare<[string, string, string, string | null], JobRow>(
      "INSERT INTO jobs (kind, payload, status, created_at, not_before) VALUES (?, ?, 'pending', ?, ?) RETURNING *",
    ),
    get: db.prepare<[number], JobRow>("SELECT * FROM jobs WHERE id = ?"),
    // ISO-8601 UTC text with milliseconds orders like the instants it names.
    nextDue: db.prepare<[string, string], JobRow>(
      "SELECT * FROM jobs WHERE status = 'pending' AND (not_before IS NULL OR not_before <= ?) " +
        "AND kind NOT IN (SELECT value FROM json_each(?)) ORDER BY id LIMIT 1",
    ),
    nextDeferred: db
      .prepare<[string], string | null>("SELECT min(not_before) FROM jobs WHERE status = 'pending' AND not_before > ?")
      .pluck(),
    claim: db.prepare<[string, number], JobRow>(
      "UPDATE jobs SET status = 'executing', started_at = ?, attempts = attempts + 1 " +
        "WHERE id = ? AND status = 'pending' RETURNING *",
    ),
    finish: db.prepare<[JobOutcome, string, string | null, number], JobRow>(
      "UPDATE jobs SET status = ?, ended_at = ?, canceled_at = coalesce(canceled_at, ?) " +
        "WHERE id = ? AND status = 'executing' RETURNING *",
    ),
    cancelPending: db.prepare<[string, string, number], JobRow>(
      "UPDATE jobs SET status = 'failed', ended_at = ?, canceled_at = ? WHERE id = ? AND status = 'pending' RETURNING *",
    ),
    orphans: db.prepare<[], JobRow>("SELECT * FROM jobs WHERE status = 'executing' ORDER BY id"),
    addLog: db.prepare<[number, JobLogLevel, string, string]>(
      "INSERT INTO job_log (job_id, level, message, logged_at) VALUES (?, ?, ?, ?)",
    ),
    readLog: db.prepare<[number], { level: JobLogLevel; message: string; logged_at: string }>(
      "SELECT level, message, logged_at FROM job_log WHERE job_id = ? ORDER BY id",
    ),
  };

  const running = new Map<number, Running>();
  let state: "new" | "started" | "stopping" | "stopped" = "new";
  let wakeTimer: NodeJS.Timeout | undefined;

  /**
   * A job's record is the runner's own bookkeeping, which no client waits for: while another
   * process holds the write lock, it waits (without blocking) for as long as that lasts.
   */
  const persist = <T>(write: () => T) => retryWhileBusy(db, write, Number.POSITIVE_INFINITY);

  /** By job: lines that found the database busy, written (in order) before the job's next line or its end. */
  const unwritten = new Map<number, LogLine[]>();
  const addLines = db.transaction((id: number, lines: readonly LogLine[]) => {
    for (const [level, text, at] of lines) sql.addLog.run(id, level, text, at);
  });
  /** Never fails for a busy database: a deployment must not fail because its log could not be written yet. */
  const writeLog = (id: number, level: JobLogLevel, message: string) => {
    const text = truncateLogMessage(message);
    const lines: LogLine[] = [...(unwritten.get(id) ?? []), [level, text, now()]];
    try {
      addLines(id, lines);
      unwritten.delete(id);
    } catch (error) {
      if (!isBusy(error)) throw error;
      unwritten.set(id, lines);
    }
  };

  /** One transaction: the final status and the line explaining it land together. */
  const endTx = db.transaction((id: number, outcome: JobOutcome, canceled: boolean, line?: [JobLogLevel, string]) => {
    const at = now();
    const row = sql.finish.get(outcome, at, canceled ? at : null, id);
    if (row !== undefined && line !== undefined) writeLog(id, ...line);
    return row;
  });
  const end = async (id: number, outcome: JobOutcome, canceled: boolean, line?: [JobLogLevel, string]) => {
    const row = await persist(() => endTx(id, outcome, canceled, line));
    unwritten.delete(id);
    return row;
  };

  const notify = (row: JobRow) =>
    notifyFinished(toJob(row), [options.onFinished, kinds.get(row.kind)?.onFinished], log);

  /** Kinds whose own limit is reached: their due jobs wait, the others' do not. */
  const saturatedKinds = (): string => JSON.stringify(saturatedKindsOf(running.values(), kinds));

  async function execute(job: Job, entry: Running): Promise<void> {
    const { controller } = entry;
    let settled = false;
    const context: JobContext = {
      signal: controller.signal,
      log(level, message) {
        if (settled || entry.abandoned) return;
        writeLog(job.id, level, message);
      },
    };
    const outcome = await runHandler(handlers.get(job.kind), job, context);
    settled = true;
    if (entry.abandoned) return;
    const [final, line] = endingOf(outcome, entry.canceled);
    const row = await end(job.id, final, entry.canceled, line);
    if (row !== undefined) await notify(row);
  }

  /** Arms one timer for the earliest job waiting for its notBefore. */
  function wakeForDeferred(at: string): void {
    clearTimeout(wakeTimer);
    const earliest = sql.nextDeferred.get(at);
    const poll = options.pollMs ?? Number.POSITIVE_INFINITY;
    if (earliest === undefined || earliest === null) {
      if (Number.isFinite(poll)) wakeTimer = setTimeout(pump, poll).unref();
      return;
    }
    // Capped, so that a clock that jumps (or a test clock) is looked at again before long.
    const delay = Math.min(Math.max(Date.parse(earliest) - Date.parse(at), 1), MAX_WAKE_DELAY_MS, poll);
    wakeTimer = setTimeout(pump, delay).unref();
  }

  /** Takes pending jobs while there is room; synchronous, so two calls cannot claim one job. */
  function pump(): void {
    while (state === "started" && running.size < options.concurrency) {
      let row: JobRow | undefined;
      try {
        const at = now();
        const next = sql.nextDue.get(at, saturatedKinds());
        if (next === undefined) return wakeForDeferred(at);
        row = sql.claim.get(at, next.id);
      } catch (error) {
        if (isBusy(error)) {
          // Another process holds the write lock: look again shortly (no log line per attempt).
          clearTimeout(wakeTimer);
          wakeTimer = setTimeout(pump, BUSY_RETRY_MS).unref();
          return;
        }
        log.error({ err: error }, "the job runner could not take the next job");
        return;
      }
      if (row === undefined) continue;
      const job = toJob(row);
      const entry: Running = {
        kind: job.kind,
        controller: new AbortController(),
        done: Promise.resolve(),
        canceled: false,
        abandoned: false,
      };
      running.set(job.id, entry);
      // Started on the next tick: a handler that enqueues synchronously must not re-enter here.
      entry.done = Promise.resolve()
        .then(() => execute(job, entry))
        .catch((error: unknown) => log.error({ jobId: job.id, err: error }, "the job runner could not record a job"))
        .finally(() => {
          running.delete(job.id);
          pump();
        });
    }
  }

  return {
    handle(kind, handler, kindOptions = {}) {
      checkNewKind(kind, state !== "new", handlers, kindOptions);
      handlers.set(kind, handler);
      kinds.set(kind, kindOptions);
    },

    async enqueue(kind, payload, options = {}) {
      const { json, notBefore } = checkNewJob(handlers, kind, payload, options.notBefore);
      const row = (await retryWhileBusy(db, () => sql.insert.get(kind, json, now(), notBefore))) as JobRow;
      queueMicrotask(pump);
      return row.id;
    },

    async findJob(id) {
      const row = sql.get.get(id);
      return row === undefined ? undefined : toJob(row);
    },

    async readLog(id) {
      if (sql.get.get(id) === undefined) throw notFound("JOB_NOT_FOUND", `There is no job ${id}.`);
      return sql.readLog.all(id).map((r) => ({ level: r.level, message: r.message, loggedAt: new Date(r.logged_at) }));
    },

    async start() {
      if (state !== "new") throw new Error("A job runner starts once.");
      state = "started";
      const orphans = sql.orphans.all();
      for (const orphan of orphans) {
        const row = await end(orphan.id, "failed", false, ["error", INTERRUPTED_MESSAGE]);
        if (row !== undefined) await notify(row);
      }
      pump();
    },

    async stop() {
      if (state === "new" || state === "stopped") {
        state = "stopped";
        return;
      }
      state = "stopping";
      clearTimeout(wakeTimer);
      const all = Promise.all([...running.values()].map((entry) => entry.done));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), stopTimeoutMs);
      });
      const gaveUp = await Promise.race([all.then(() => false), timedOut]);
      clearTimeout(timer);
      if (gaveUp) {
        for (const [id, entry] of running) {
          entry.abandoned = true;
          entry.controller.abort(new DomainError("unavailable", "JOB_RUNNER_STOPPED", "The job runner stopped."));
          log.warn({ jobId: id }, "a job was still executing when the job runner stopped");
        }
      }
      state = "stopped";
    },

    async cancel(id) {
      const row = sql.get.get(id);
      if (row === undefined) throw notFound("JOB_NOT_FOUND", `There is no job ${id}.`);
      if (row.status === "pending") {
        const at = now();
        const ended = await retryWhileBusy(
          db,
          db.transaction(() => {
            const updated = sql.cancelPending.get(at, at, id);
            if (updated !== undefined) writeLog(id, "error", CANCELED_BEFORE_START_MESSAGE);
            return updated;
          }),
        );
        if (ended !== undefined) {
          await notify(ended);
          return true;
        }
        return this.cancel(id); // it was taken meanwhile; cancel it as executing
      }
      if (row.status !== "executing") return false;
      const entry = running.get(id);
      if (entry === undefined || entry.abandoned) {
        // Executing but not under this runner's control: left by a dead process (this runner has
        // not started yet), or given up on by stop().
        const ended = await end(id, "failed", true, ["error", CANCELED_NOWHERE_MESSAGE]);
        if (ended !== undefined) await notify(ended);
        return ended !== undefined;
      }
      if (!entry.canceled) {
        entry.canceled = true;
        writeLog(id, "warn", CANCEL_REQUESTED_MESSAGE);
        entry.controller.abort(new DomainError("conflict", "JOB_CANCELED", "The job was canceled."));
      }
      return true;
    },
  };
}
