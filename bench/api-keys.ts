import type { ScenarioContext } from "./scenarios.js";

/** Creates an API key through the API-key API as the bench's administrator; `spec` is the create body. */
export async function createApiKey(ctx: ScenarioContext, spec: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${ctx.url}/api/api-keys/create`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-ApiKey": ctx.adminKey },
    body: JSON.stringify({ displayName: "bench", ...spec }),
  });
  const body = (await res.json()) as { key?: string };
  if (res.status !== 201 || body.key === undefined) throw new Error(`creating a key answered ${res.status}`);
  return body.key;
}
