import type { TestApp } from "./app.js";

/** Creates an asset directory through the management API (as an operator would). */
export async function createAssetDirectory(
  t: TestApp,
  name: string,
  settings: Record<string, unknown> = {},
): Promise<void> {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers: { "x-apikey": t.adminKey },
    payload: { name, feedType: "asset", ...settings },
  });
  if (res.statusCode !== 201) throw new Error(`creating asset directory ${name}: ${res.statusCode} ${res.body}`);
}

/** Uploads a file with POST (create or replace) as the admin; returns the response. */
export async function putAsset(
  t: TestApp,
  dir: string,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
) {
  return t.app.inject({
    method: "POST",
    url: `/endpoints/${dir}/content/${path}`,
    headers: { "x-apikey": t.adminKey, ...headers },
    payload: body,
  });
}
