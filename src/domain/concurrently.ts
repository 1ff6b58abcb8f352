/**
 * Runs `work` on every item, at most `limit` at once, starting them in order; `more` is asked before
 * each start, and once it says no, nothing more starts. Rejects with the first failure, as
 * Promise.all does: the other workers go on with the remaining items meanwhile.
 */
export async function eachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<unknown>,
  more: () => boolean = () => true,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length && more()) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}
