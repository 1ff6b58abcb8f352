import { expect } from "vitest";
import type { TestApp } from "./app.js";

/** What `/api/retention/...` answers (areas/retention/schemas.ts), as the tests read it. */
export interface PlannedItem {
  group: string;
  name: string;
  version: string;
  /** Asset directories only. */
  path?: string;
  sha256: string;
  rule: number;
  reason: string;
  bytes: number;
  ageDays: number;
  publishedAt: string;
  lastDownloadedAt: string | null;
}

export interface RetentionPreviewJson {
  feed: string;
  unit: "versions" | "files";
  versions: number;
  bytes: number;
  examined: number;
  token?: string;
  items: PlannedItem[];
}

export interface RetentionRunJson {
  id: number;
  status: string;
  trigger: string;
  versionsDeleted: number;
  bytesFreed: number;
  versionsSkipped: number;
  fromPreview: boolean;
  log?: string[];
}

/** The retention API as the administrator key calls it: rules set, previews, runs waited for. */
export function retentionApi(t: TestApp) {
  const admin = () => ({ "x-apikey": t.adminKey });

  const setRules = (feed: string, body: Record<string, unknown>, headers: Record<string, string> = admin()) =>
    t.app.inject({ method: "POST", url: `/api/management/feeds/update/${feed}`, headers, payload: body });

  async function preview(feed: string, method: "GET" | "POST" = "GET"): Promise<RetentionPreviewJson> {
    const res = await t.app.inject({ method, url: `/api/retention/preview?feed=${feed}`, headers: admin() });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    return res.json();
  }

  /** The run once it is no longer pending or executing. */
  async function finished(feed: string, id: number): Promise<RetentionRunJson> {
    for (let i = 0; i < 200; i++) {
      const res = await t.app.inject({ url: `/api/retention/runs/${id}?feed=${feed}`, headers: admin() });
      expect(res.statusCode, res.body).toBe(200);
      const run = res.json() as RetentionRunJson;
      if (!["pending", "executing"].includes(run.status)) return run;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`run ${id} did not finish`);
  }

  /** Starts a run (of a preview's token, if given) and waits for it. */
  async function run(feed: string, token?: string): Promise<RetentionRunJson> {
    const res = await t.app.inject({
      method: "POST",
      url: `/api/retention/run?feed=${feed}`,
      headers: admin(),
      ...(token === undefined ? {} : { payload: { token } }),
    });
    expect(res.statusCode, res.body).toBe(202);
    return finished(feed, (res.json() as RetentionRunJson).id);
  }

  return { setRules, preview, finished, run };
}
