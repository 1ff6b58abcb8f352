import type { TestApp } from "./app.js";
import { readAll } from "./fixtures.js";

/**
 * The stored audit records matching `where` (SQL meaning the same on both databases, `?`
 * placeholders), oldest first, for tests that look at every column. The app queues a record as a
 * response ends and writes it once the event loop is free: on PostgreSQL a round trip later. A
 * query of the audit API first waits for every write started before it (AuditLog.flush), so one
 * is sent before the table is read: what the responses so far recorded is then all there.
 */
export async function auditRecords<Row>(t: TestApp, where = "1 = 1", ...params: unknown[]): Promise<Row[]> {
  // The record is queued by the response's onResponse hook: let it run.
  await new Promise((resolve) => setImmediate(resolve));
  const flushed = await t.app.inject({ method: "GET", url: "/api/audit?limit=1", headers: { "x-apikey": t.adminKey } });
  if (flushed.statusCode !== 200) throw new Error(`the audit API answered ${flushed.statusCode}: ${flushed.body}`);
  return readAll<Row>(t.database, `SELECT * FROM audit_records WHERE ${where} ORDER BY id`, ...params);
}
