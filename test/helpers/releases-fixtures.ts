import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { createReleasesServices, type ReleasesServices } from "../../src/areas/releases/index.js";
import type { TestApp } from "./app.js";

/** Requests and setup shared by the releases-*.test.ts suites (area E; docs/compat.md 7). */
export interface ReleasesFixtures {
  readonly services: ReleasesServices;
  json(method: InjectOptions["method"], url: string, body?: unknown, key?: string): Promise<LightMyRequestResponse>;
  /** A form body written by hand, so that `$Var` stays unencoded as the Jenkins plugin sends it. */
  form(
    method: InjectOptions["method"],
    url: string,
    pairs: ReadonlyArray<[string, string]>,
  ): Promise<LightMyRequestResponse>;
  ok<T = unknown>(res: LightMyRequestResponse): T;
  /** Creates a release through `/api/releases/create` and returns it. */
  release(applicationId: number, releaseNumber: string, pipelineName: string): Promise<Record<string, unknown>>;
  /** Application, pipeline (stages Integration -> Testing -> Production) and environments. */
  setup(
    app: string,
    options?: { releaseUsage?: string; rejectOlderBuilds?: boolean; pipeline?: string },
  ): Promise<number>;
}

export function releasesFixtures(t: TestApp): ReleasesFixtures {
  const services = createReleasesServices({ db: t.database, clock: { now: () => new Date() } });
  const json: ReleasesFixtures["json"] = (method, url, body, key = t.adminKey) =>
    t.app.inject({
      method,
      url,
      headers: { "x-apikey": key, ...(body !== undefined && { "content-type": "application/json" }) },
      ...(body !== undefined && { payload: JSON.stringify(body) }),
    });
  const form: ReleasesFixtures["form"] = (method, url, pairs) =>
    t.app.inject({
      method,
      url,
      headers: { "content-type": "application/x-www-form-urlencoded", charset: "UTF-8" },
      payload: pairs
        .map(
          ([k, v]) =>
            `${k.startsWith("$") ? `$${encodeURIComponent(k.slice(1))}` : encodeURIComponent(k)}=${encodeURIComponent(v)}`,
        )
        .join("&"),
    });
  const ok = <T>(res: LightMyRequestResponse): T => {
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    return res.json() as T;
  };
  let environments = false;
  return {
    services,
    json,
    form,
    ok,
    release: async (applicationId, releaseNumber, pipelineName) =>
      ok(await json("POST", "/api/releases/create", { applicationId, releaseNumber, pipelineName })),
    async setup(app, options = {}) {
      if (!environments) {
        for (const name of ["Integration", "Testing", "Production"]) {
          expect((await json("POST", `/api/infrastructure/environments/create/${name}`, {})).statusCode).toBe(201);
        }
        environments = true;
      }
      const pipeline = options.pipeline ?? `${app}-pipeline`;
      const stages = ["Integration", "Testing", "Production"].map((name) => ({
        name,
        environmentName: name,
        plan: [{ type: "log", message: `deploying to ${name}` }],
      }));
      ok(
        await json("POST", "/api/pipelines/create", {
          name: pipeline,
          stages,
          rejectOlderBuilds: options.rejectOlderBuilds ?? true,
        }),
      );
      const created = ok<{ id: number }>(
        await json("POST", "/api/applications/create", { name: app, releaseUsage: options.releaseUsage ?? "Required" }),
      );
      return created.id;
    },
  };
}
