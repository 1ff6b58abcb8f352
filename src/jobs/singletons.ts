import { ADVISORY_LOCKS } from "../storage/postgres/advisory-locks.js";
import { createLeadership, type Leadership } from "../storage/postgres/leadership.js";

/**
 * Background work of which one copy must run per metadata database: the schedulers (retention,
 * routine configuration checks, connector health, garbage collection, audit pruning, the multipart
 * sweep) and the resumption of feed store moves. On one machine they run while the app does; in
 * cluster mode on the one node that leads (storage/postgres/leadership.ts), and on another as soon
 * as that node stops leading. Work here must tolerate a brief overlap of two leaders (leadership
 * is a lease without fencing): each is idempotent, or guarded by its own rows.
 */
export interface Singleton {
  /** For logs and the cluster view. */
  readonly name: string;
  start(): void | Promise<void>;
  /** Stops the work; awaited before another node may start it. */
  stop(): void | Promise<void>;
}

export interface Singletons {
  /** Adds work before start(). */
  add(work: Singleton): void;
  /** Called when the app is ready: runs the work now (one machine) or once this node leads. */
  start(): Promise<void>;
  /** Called as the app closes: stops the work (and gives up leading). */
  stop(): Promise<void>;
  /** Whether the work runs on this node now. */
  running(): boolean;
}

interface Log {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

function runner(log: Log) {
  const works: Singleton[] = [];
  let running = false;
  return {
    works,
    running: () => running,
    async startAll() {
      running = true;
      for (const work of works) {
        try {
          await work.start();
        } catch (error) {
          log.warn({ err: error, work: work.name }, "background work did not start");
        }
      }
    },
    async stopAll() {
      if (!running) return;
      running = false;
      // Each is stopped even when another fails to: none may keep running once leadership is lost.
      await Promise.all(
        works.map(async (work) => {
          try {
            await work.stop();
          } catch (error) {
            log.warn({ err: error, work: work.name }, "background work did not stop cleanly");
          }
        }),
      );
    },
  };
}

/** One machine: the work runs while the app does. */
export function createLocalSingletons(log: Log): Singletons {
  const all = runner(log);
  return {
    add: (work) => void all.works.push(work),
    start: () => all.startAll(),
    stop: () => all.stopAll(),
    running: all.running,
  };
}

export interface LedSingletonsOptions {
  readonly url: string;
  readonly nodeId: string;
  readonly log: Log;
  /** Test seams: how fast a standby node tries for the lock and the leader checks its session. */
  readonly retryMs?: number;
  readonly checkMs?: number;
}

/** Cluster mode: the work runs on the node holding the scheduler's advisory lock, one at a time. */
export function createLedSingletons(options: LedSingletonsOptions): Singletons {
  const { log } = options;
  const all = runner(log);
  // Gains and losses are applied in order: a stop never overtakes the start it follows.
  let turn: Promise<void> = Promise.resolve();
  const inTurn = (step: () => Promise<void>) => (turn = turn.then(step));
  const leadership: Leadership = createLeadership({
    url: options.url,
    name: "scheduler",
    key: ADVISORY_LOCKS.scheduler,
    nodeId: options.nodeId,
    ...(options.retryMs !== undefined ? { retryMs: options.retryMs } : {}),
    ...(options.checkMs !== undefined ? { checkMs: options.checkMs } : {}),
    onGain: () => {
      log.info({ node: options.nodeId }, "this node now runs the cluster's schedulers");
      void inTurn(() => all.startAll());
    },
    onLose: async () => {
      await inTurn(() => all.stopAll());
      log.info({ node: options.nodeId }, "this node no longer runs the cluster's schedulers");
    },
    onError: (error) => log.warn({ err: error }, "scheduler leadership"),
  });
  return {
    add: (work) => void all.works.push(work),
    async start() {
      leadership.start();
    },
    async stop() {
      await leadership.close();
      await inTurn(() => all.stopAll());
    },
    running: all.running,
  };
}
