import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPostgres } from "../../src/storage/metadata-db.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { auditRecords } from "../helpers/audit-records.js";
import { execute } from "../helpers/fixtures.js";

/**
 * The audit log (issue 17 section 4): one record per write request of every route in the OpenAPI
 * description, refused authorisations on any method, no secret in any column, the query and
 * export APIs, and append-only enforced by the database itself.
 */

let t: TestApp;
const key = () => ({ "x-apikey": t.adminKey });

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
});
afterAll(async () => t.close());

interface Row {
  id: number;
  actor_kind: string;
  actor_name: string;
  action: string;
  object: string;
  status: number;
  outcome: string;
  request_id: string;
}

/** Records are written once the event loop is free after the response: auditRecords waits for that. */
const rows = (where?: string, ...args: unknown[]) => auditRecords<Row>(t, where, ...args);

const forRequest = (requestId: string) => rows("request_id = ?", requestId);

describe("audit records", () => {
  it("each write operation of the OpenAPI description leaves exactly one record naming its route", async () => {
    const spec = (await t.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    let walked = 0;
    for (const [path, operations] of Object.entries(spec.paths)) {
      for (const method of Object.keys(operations)) {
        const upper = method.toUpperCase();
        if (!["POST", "PUT", "PATCH", "DELETE"].includes(upper)) continue;
        const url = path.replace(/\{([^}]+)\}/g, (_all, name: string) => (name === "*" ? "x/y.txt" : `audit-${name}`));
        const response = await t.app.inject({ method: upper as "POST", url, headers: key() });
        const requestId = String(response.headers["x-request-id"]);
        const found = await forRequest(requestId);
        const pattern = path.replace(/\{([^}]+)\}/g, (_all, name: string) => (name === "*" ? "*" : `:${name}`));
        expect(found, `${upper} ${path} -> ${response.statusCode}`).toHaveLength(1);
        expect(found[0]).toMatchObject({ action: `${upper} ${pattern}`, status: response.statusCode });
        walked++;
      }
    }
    expect(walked).toBeGreaterThan(50);
  }, 120_000);

  it("records who did it, the route's parameters and the outcome; a read is not recorded", async () => {
    const created = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: key(),
      payload: { name: "audited", feedType: "universal" },
    });
    expect(created.statusCode).toBeLessThan(300);
    const [record] = await forRequest(String(created.headers["x-request-id"]));
    // The body names the feed (an object field); the route has no parameter.
    expect(record).toMatchObject({
      actor_kind: "system-key",
      outcome: "success",
      action: "POST /api/management/feeds/create",
      object: "name=audited",
    });
    const promoted = await t.app.inject({
      method: "POST",
      url: "/api/promotions/promote?fromFeed=audited&toFeed=elsewhere&comments=release-notes",
      headers: key(),
      payload: { name: "lib", version: "1.0.0" },
    });
    const [promotion] = await forRequest(String(promoted.headers["x-request-id"]));
    expect(promotion).toMatchObject({ object: "fromFeed=audited toFeed=elsewhere name=lib version=1.0.0" });
    const removed = await t.app.inject({
      method: "DELETE",
      url: "/api/management/feeds/delete/audited",
      headers: key(),
    });
    const [deletion] = await forRequest(String(removed.headers["x-request-id"]));
    expect(deletion).toMatchObject({ object: "name=audited", status: removed.statusCode });
    const read = await t.app.inject({ method: "GET", url: "/api/management/feeds/list", headers: key() });
    expect(read.statusCode).toBe(200);
    expect(await forRequest(String(read.headers["x-request-id"]))).toHaveLength(0);
  });

  it("records refused authorisations on any method, with the user name a Basic sign-in tried", async () => {
    const anonymous = await t.app.inject({ method: "GET", url: "/api/security/users/list" });
    expect(anonymous.statusCode).toBe(401);
    expect(await forRequest(String(anonymous.headers["x-request-id"]))).toEqual([
      expect.objectContaining({ actor_kind: "anonymous", status: 401, outcome: "refused" }),
    ]);
    const basic = await t.app.inject({
      method: "GET",
      url: "/api/security/users/list",
      headers: { authorization: `Basic ${Buffer.from("mallory:guess-pass-123").toString("base64")}` },
    });
    expect([401, 403]).toContain(basic.statusCode);
    const [refused] = await forRequest(String(basic.headers["x-request-id"]));
    expect(refused).toMatchObject({ actor_kind: "anonymous", actor_name: "mallory", outcome: "refused" });
  });

  it("no secret reaches any column: keys in the query, headers and Basic, passwords and secrets in JSON bodies", async () => {
    const secrets = [
      "QUERYKEY-s3cr3t-1",
      "HEADERKEY-s3cr3t-2",
      "BASICPASS-s3cr3t-3",
      "BODYPASS-s3cr3t-4",
      "BODYKEY-s3cr3t-5",
    ];
    await t.app.inject({ method: "POST", url: `/api/security/users/add?API_Key=${secrets[0]}` });
    await t.app.inject({ method: "POST", url: "/api/security/users/add", headers: { "x-apikey": secrets[1] } });
    await t.app.inject({
      method: "PUT",
      url: "/upack/nowhere/upload",
      headers: { authorization: `Basic ${Buffer.from(`api:${secrets[2]}`).toString("base64")}` },
    });
    await t.app.inject({
      method: "POST",
      url: "/api/security/users/add",
      headers: key(),
      payload: { name: "audit-user", password: secrets[3], API_Key: secrets[4] },
    });
    await t.app.inject({
      method: "POST",
      url: `/api/security/users/edit?key=${secrets[4]}`,
      payload: { name: "audit-user", password: secrets[3], api_key: secrets[4] },
    });
    const all = JSON.stringify(await rows());
    for (const secret of secrets) expect(all).not.toContain(secret);
    expect(all).toContain("POST /api/security/users/add");
    expect(all).toContain("name=audit-user");
  });
});

describe("reading the audit log", () => {
  it("filters by actor, action prefix, object and time; pages newest first by keyset", async () => {
    for (const feed of ["page-a", "page-b", "page-c"]) {
      await t.app.inject({ method: "DELETE", url: `/api/management/feeds/delete/${feed}`, headers: key() });
    }
    const first = await t.app.inject({
      method: "GET",
      url: "/api/audit?action=DELETE%20/api/management/feeds/delete&object=page-&limit=2",
      headers: key(),
    });
    expect(first.statusCode).toBe(200);
    const page = first.json() as { records: { id: number; object: string }[]; next?: number };
    expect(page.records.map((r) => r.object)).toEqual(["name=page-c", "name=page-b"]);
    expect(page.next).toBe(page.records[1]?.id);
    const second = await t.app.inject({
      method: "GET",
      url: `/api/audit?action=DELETE&object=page-&limit=2&after=${page.next}`,
      headers: key(),
    });
    const rest = second.json() as { records: { object: string }[]; next?: number };
    expect(rest.records.map((r) => r.object)).toEqual(["name=page-a"]);
    expect(rest.next).toBeUndefined();

    const future = await t.app.inject({ method: "GET", url: "/api/audit?from=2999-01-01", headers: key() });
    expect(future.json()).toEqual({ records: [] });
    const byActor = await t.app.inject({ method: "GET", url: "/api/audit?actor=mallory", headers: key() });
    expect((byActor.json() as { records: unknown[] }).records).toHaveLength(1);
    for (const bad of ["from=yesterday", "limit=0", "limit=5000", "after=-1"]) {
      const refused = await t.app.inject({ method: "GET", url: `/api/audit?${bad}`, headers: key() });
      expect(refused.statusCode, bad).toBe(400);
    }
  });

  it("exports JSON lines, streamed, with the same filters", async () => {
    const response = await t.app.inject({ method: "GET", url: "/api/audit/export?object=page-", headers: key() });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^application\/x-ndjson/);
    const lines = response.body
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { object: string });
    expect(lines.map((l) => l.object)).toEqual(["name=page-c", "name=page-b", "name=page-a"]);
  });

  it("needs the administrator's privilege; no method edits or deletes records", async () => {
    expect((await t.app.inject({ method: "GET", url: "/api/audit" })).statusCode).toBe(401);
    for (const method of ["PUT", "DELETE", "POST", "PATCH"] as const) {
      for (const url of ["/api/audit", "/api/audit/export", "/api/audit/1"]) {
        const response = await t.app.inject({ method, url, headers: key() });
        expect([404, 405], `${method} ${url}`).toContain(response.statusCode);
      }
    }
  });

  it("the database refuses UPDATE and DELETE of records, and moving the pruning cutoff to now", async () => {
    const refused = (sql: string, ...params: unknown[]) => expect(execute(t.database, sql, params)).rejects;
    // SQLite's INSERT OR REPLACE; PostgreSQL has ON CONFLICT DO UPDATE instead.
    const replacing = isPostgres(t.database)
      ? (into: string, values: string, update: string) =>
          `INSERT INTO ${into} ${values} ON CONFLICT (id) DO UPDATE SET ${update}`
      : (into: string, values: string) => `INSERT OR REPLACE INTO ${into} ${values}`;
    await refused("UPDATE audit_records SET actor_name = 'x'").toThrow(/append-only/);
    await refused("DELETE FROM audit_records").toThrow(/append-only/);
    await refused(
      replacing("audit_records", "SELECT * FROM audit_records LIMIT 1", "actor_name = excluded.actor_name"),
    ).toThrow(/append-only/);
    await refused("UPDATE audit_retention SET prune_before = ?", new Date().toISOString()).toThrow(/cutoff/);
    await refused("DELETE FROM audit_retention").toThrow(/cutoff/);
    await refused(replacing("audit_retention", "VALUES (1, '2999')", "prune_before = excluded.prune_before")).toThrow(
      /cutoff/,
    );
    expect((await rows()).length).toBeGreaterThan(50);
  });
});
