import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";

describe("self-description and metrics", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => t.close());

  it("serves an OpenAPI description of the routes without a key", async () => {
    const res = await t.app.inject({ method: "GET", url: "/openapi.json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toContain("/health");
    expect(doc.paths["/health"].get.responses["200"]).toBeDefined();
    expect(doc.paths["/metrics"].get).toBeDefined();
    // Every documented operation says what it does.
    for (const [path, operations] of Object.entries<Record<string, { summary?: string }>>(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(operation.summary, `${method.toUpperCase()} ${path}`).toBeTruthy();
      }
    }
  });

  it("serves a browsable /docs page without a key", async () => {
    const res = await t.app.inject({ method: "GET", url: "/docs/" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/text\/html/);
  });

  it("refuses /metrics to anonymous callers with a Basic challenge", async () => {
    const res = await t.app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(401);
    expect(res.headers["www-authenticate"]).toBe('Basic realm="Wharf"');
  });

  it("refuses /metrics to an unknown key", async () => {
    const res = await t.app.inject({ method: "GET", url: "/metrics", headers: { "x-apikey": "not-a-key-at-all-123" } });
    expect(res.statusCode).toBe(403);
    expect(res.body).toBe("The specified API key does not have the proper permissions to perform this action.");
  });

  it("serves Prometheus metrics labelled by route template to a full-control key", async () => {
    await t.app.inject({ method: "GET", url: "/health" });
    await t.app.inject({ method: "GET", url: "/nope/at/all" });
    const res = await t.app.inject({ method: "GET", url: "/metrics", headers: { "x-apikey": t.adminKey } });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.body).toMatch(/wharf_http_requests_total\{method="GET",route="\/health",status="200"\} \d+/);
    expect(res.body).toMatch(/wharf_http_requests_total\{method="GET",route="unmatched",status="404"\}/);
    // The process's standard metrics beside Wharf's own: memory, CPU, event-loop lag, GC.
    expect(res.body).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(res.body).toMatch(/^process_cpu_user_seconds_total [\d.]+/m);
    expect(res.body).toMatch(/^nodejs_eventloop_lag_seconds [\d.e-]+/m);
    expect(res.body).toMatch(/^# TYPE nodejs_gc_duration_seconds histogram$/m);
    expect(res.body).toMatch(/wharf_http_request_duration_seconds_bucket/);
    expect(res.body).toMatch(/wharf_http_response_bytes_total/);
    expect(res.body).toMatch(/wharf_blob_store_bytes \d+/);
  });
});
