/** The first sweep waits until start-up is over; later ones run a few times per max age, at least hourly. */
const FIRST_SWEEP_DELAY_MS = 1_000;
const MAX_SWEEP_INTERVAL_MS = 3_600_000;
const MIN_SWEEP_INTERVAL_MS = 1_000;

const warnOfSweepError = (error: unknown) =>
  process.emitWarning(`Removing abandoned multipart uploads failed: ${String(error)}`);

/**
 * Runs `sweep` now and then between `start` and `stop`, never two at once. A sweep never throws:
 * its errors go to the handler given to `start`, else to a process warning.
 */
export function createSweeper(sweep: () => Promise<unknown>, options: { maxAgeMs: number }) {
  const timers: NodeJS.Timeout[] = [];
  let sweeping = false;
  let onError: (error: unknown) => void = warnOfSweepError;

  const run = async () => {
    if (sweeping) return;
    sweeping = true;
    try {
      await sweep();
    } catch (error) {
      // After stop() the database may be closed under a running sweep: not worth a warning.
      if (timers.length > 0) onError(error);
    } finally {
      sweeping = false;
    }
  };

  return {
    start(handler?: (error: unknown) => void): void {
      if (timers.length > 0) return;
      onError = handler ?? warnOfSweepError;
      const interval = Math.max(MIN_SWEEP_INTERVAL_MS, Math.min(options.maxAgeMs / 4, MAX_SWEEP_INTERVAL_MS));
      // unref: a pending sweep never keeps the process alive.
      timers.push(setTimeout(() => void run(), FIRST_SWEEP_DELAY_MS).unref());
      timers.push(setInterval(() => void run(), interval).unref());
    },
    stop(): void {
      for (const timer of timers.splice(0)) clearTimeout(timer);
    },
  };
}
