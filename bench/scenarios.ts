/** Named benchmark scenarios: what to request, and what data must exist first. */

export interface ScenarioContext {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** A full-control API key (WHARF_ADMIN_API_KEY of the server under benchmark). */
  readonly adminKey: string;
  readonly log: (message: string) => void;
}

export interface Scenario {
  readonly name: string;
  /** Creates the data the scenario reads; runs once, right before the scenario. */
  setup?(ctx: ScenarioContext): Promise<void>;
  request(ctx: ScenarioContext): { method: "GET" | "POST"; path: string; headers?: Record<string, string> };
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: "health",
    request: () => ({ method: "GET", path: "/health" }),
  },
  {
    name: "feeds-list-1000",
    setup: (ctx) => seedFeeds(ctx, 1000),
    request: (ctx) => ({ method: "GET", path: "/api/management/feeds/list", headers: { "X-ApiKey": ctx.adminKey } }),
  },
];

/** Creates `count` universal feeds through the feed management API, 10 requests at a time. */
async function seedFeeds(ctx: ScenarioContext, count: number): Promise<void> {
  const started = Date.now();
  const names = Array.from({ length: count }, (_, i) => `bench-feed-${String(i + 1).padStart(4, "0")}`);
  const workers = Array.from({ length: 10 }, async () => {
    for (let name = names.pop(); name !== undefined; name = names.pop()) {
      const res = await fetch(`${ctx.url}/api/management/feeds/create`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-ApiKey": ctx.adminKey },
        body: JSON.stringify({ name, feedType: "universal" }),
      });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`creating feed ${name} answered ${res.status}: ${text.slice(0, 200)}`);
    }
  });
  await Promise.all(workers);
  ctx.log(`seeded ${count} feeds in ${Date.now() - started} ms`);
}
