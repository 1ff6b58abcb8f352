import type { Clock } from "../../domain/clock.js";
import { SERVER_ACTOR } from "../../lifecycle/events.js";
import type { FeedService } from "../management/index.js";
import type { RetentionRepository } from "./repository.js";
import { parseRetentionSchedule } from "./schedule.js";
import type { RetentionService } from "./service.js";

/**
 * Scheduled retention runs: every `intervalMs`, each feed (universal feed or asset directory) with
 * retention enabled, rules and a schedule is looked at; when its cron expression fired since the last look (by the app's
 * Clock, so tests move time by hand), one run is enqueued on the job runner, unless one of the
 * feed's runs still waits or executes. Firings missed while the server was down make one run at
 * the next look, not one each. A schedule seen for the first time (or changed) fires from then on.
 */

export interface RetentionSchedulerDeps {
  readonly feeds: FeedService;
  readonly repository: RetentionRepository;
  readonly service: RetentionService;
  readonly clock: Clock;
  readonly intervalMs: number;
  readonly log: { warn(fields: object, message: string): void };
}

export interface RetentionScheduler {
  /** Looks at every schedule once; resolves when the runs due are enqueued. */
  check(): Promise<void>;
  start(): void;
  stop(): void;
}

export function createRetentionScheduler(deps: RetentionSchedulerDeps): RetentionScheduler {
  const { feeds, repository, service, clock, log } = deps;
  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<void> | undefined;

  async function checkOnce(): Promise<void> {
    const now = clock.now();
    for (const feed of await feeds.listFeeds()) {
      const expression = feed.settings.retentionSchedule;
      if (expression === undefined || !feed.settings.retentionRulesEnabled) continue;
      if (feed.settings.retentionRules.length === 0) continue;
      const state = await repository.scheduleState(feed.id);
      if (state === undefined || state.schedule !== expression) {
        await repository.setScheduleState(feed.id, expression, now.toISOString());
        continue;
      }
      const next = parseRetentionSchedule(expression).nextAfter(new Date(state.since));
      if (next === undefined || next > now) continue;
      await repository.setScheduleState(feed.id, expression, now.toISOString());
      if (await repository.hasActiveRun(feed.id)) continue;
      await service.requestRunOf(feed, { trigger: "schedule", requestedBy: SERVER_ACTOR });
    }
  }

  async function check(): Promise<void> {
    // One look at a time: a slow look is not overtaken by the next tick.
    checking ??= checkOnce().finally(() => (checking = undefined));
    return checking;
  }

  return {
    check,
    start() {
      if (deps.intervalMs <= 0 || timer !== undefined) return;
      timer = setInterval(() => {
        check().catch((error: unknown) => log.warn({ err: error }, "retention schedules could not be checked"));
      }, deps.intervalMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
