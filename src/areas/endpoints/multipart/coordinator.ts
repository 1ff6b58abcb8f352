import type { MultipartPart } from "./repository.js";

/** What this process is doing with one upload. */
export interface Activity {
  /** Parts whose byte ranges are taken and whose bytes are being written, by index. */
  readonly receiving: Map<number, MultipartPart>;
  completing: boolean;
}

/** Names an upload across asset directories: client ids are unique only within a directory. */
export const coordinationKey = (feedId: number, uploadKey: string) => `${feedId}/${uploadKey}`;

/**
 * What this process is doing with each upload: the parts being received (their ranges are taken
 * before their bytes are written, so two requests can never write the same bytes) and whether it is
 * being completed. Critical sections of one upload run one at a time; the streaming between them
 * does not, so parts of one upload can arrive concurrently.
 */
export function createCoordinator() {
  const queues = new Map<string, Promise<void>>();
  const activities = new Map<string, Activity>();

  function activity(key: string): Activity {
    let found = activities.get(key);
    if (found === undefined) activities.set(key, (found = { receiving: new Map(), completing: false }));
    return found;
  }

  /** Forgets an upload nothing is happening to. */
  function settle(key: string): void {
    const found = activities.get(key);
    if (found !== undefined && found.receiving.size === 0 && !found.completing) activities.delete(key);
  }

  return {
    async exclusive<T>(key: string, section: () => Promise<T>): Promise<T> {
      const result = (queues.get(key) ?? Promise.resolve()).then(section);
      const tail = result.then(
        () => undefined,
        () => undefined,
      );
      queues.set(key, tail);
      try {
        return await result;
      } finally {
        if (queues.get(key) === tail) queues.delete(key);
      }
    },
    /** Runs `use` with the upload's activity; an activity `use` left empty (it refused) is forgotten. */
    async withActivity<T>(key: string, use: (activity: Activity) => Promise<T>): Promise<T> {
      try {
        return await use(activity(key));
      } finally {
        settle(key);
      }
    },
    busy: (key: string) => activities.has(key),
    endReceiving(key: string, index: number): void {
      activity(key).receiving.delete(index);
      settle(key);
    },
    endCompleting(key: string): void {
      activity(key).completing = false;
      settle(key);
    },
  };
}
