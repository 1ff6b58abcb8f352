import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuditLog } from "../../src/areas/audit/index.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";

/**
 * What is recorded outside HTTP: the CLI's data commands that change rows (run as a process on the
 * data directory, as an operator would), and retention pruning with a controlled clock.
 */

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
});
afterAll(async () => t.close());

async function wharf(...args: string[]): Promise<void> {
  await run(process.execPath, ["--import", "tsx", path.join(ROOT, "src/cli/main.ts"), ...args], {
    cwd: ROOT,
    env: { ...process.env, WHARF_DATA_DIR: t.dataDir, WHARF_LOG_LEVEL: "silent" },
  });
}

interface Row {
  actor_kind: string;
  actor_name: string;
  address: string;
  action: string;
  object: string;
  outcome: string;
}
const cliRows = () => t.db.prepare("SELECT * FROM audit_records WHERE actor_kind = 'cli' ORDER BY id").all() as Row[];

describe("the CLI's local changes", () => {
  it("a command that changes rows leaves one record (no password); one that reads leaves none", async () => {
    await wharf("users", "add", "cli-audited", "--password", "CLI-s3cret-pass-9");
    await wharf("users", "list");
    const rows = cliRows();
    expect(rows).toEqual([
      expect.objectContaining({
        actor_name: expect.stringMatching(/^cli:/),
        address: "local",
        action: "cli users add",
        object: "name=cli-audited",
        outcome: "success",
      }),
    ]);
    const all = JSON.stringify(t.db.prepare("SELECT * FROM audit_records").all());
    expect(all).not.toContain("CLI-s3cret-pass-9");
  }, 60_000);
});

describe("retention", () => {
  it("prunes records older than the retention period, by the clock it is given, and keeps the rest", async () => {
    let now = new Date("2025-01-01T00:00:00.000Z");
    const log = createAuditLog({ db: t.db, clock: { now: () => now }, retentionDays: 30 });
    const entry = (at: string) => ({
      at,
      actor: { kind: "user" as const, name: "retention-test" },
      address: "127.0.0.1",
      action: "POST /retention-test",
      object: "",
      status: 200,
      outcome: "success" as const,
      requestId: at,
    });
    log.append(entry("2024-11-01T00:00:00.000Z"));
    log.append(entry("2024-12-15T00:00:00.000Z"));
    await log.flush();
    const count = () =>
      (
        t.db.prepare("SELECT count(*) AS n FROM audit_records WHERE actor_name = 'retention-test'").get() as {
          n: number;
        }
      ).n;
    expect(await log.prune()).toBe(1);
    expect(count()).toBe(1);
    now = new Date("2025-02-01T00:00:00.000Z");
    expect(await log.prune()).toBe(1);
    expect(count()).toBe(0);
    const forever = createAuditLog({ db: t.db, clock: { now: () => now }, retentionDays: 0 });
    expect(await forever.prune()).toBe(0);
    log.close();
    forever.close();
  });
});

describe("wharf audit", () => {
  it("lists, filters and exports the running server's records over HTTP", async () => {
    const { auditCommand } = await import("../../src/cli/audit.js");
    await t.app.listen({ port: 0, host: "127.0.0.1" });
    const address = t.app.server.address();
    const server = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    await t.app.inject({
      method: "DELETE",
      url: "/api/management/feeds/delete/cli-listed",
      headers: { "x-apikey": t.adminKey },
    });
    const lines: string[] = [];
    const errors: string[] = [];
    const io = { config: t.config, out: (l: string) => lines.push(l), err: (l: string) => errors.push(l) };
    const common = ["--server", server, "--api-key", t.adminKey, "--object", "cli-listed"];
    expect(await auditCommand(common, io)).toBe(0);
    expect(lines).toEqual([
      expect.stringMatching(/DELETE \/api\/management\/feeds\/delete\/:name {2}name=cli-listed {2}\d{3} /),
    ]);
    lines.length = 0;
    expect(await auditCommand([...common, "--jsonl"], io)).toBe(0);
    expect(lines.map((l) => (JSON.parse(l) as { object: string }).object)).toEqual(["name=cli-listed"]);
    expect(await auditCommand(["--server", server, "--api-key", "wrong-key", "--json"], io)).toBe(1);
    expect(errors.at(-1)).toMatch(/answered 403/);
    expect(await auditCommand(["--bogus"], io)).toBe(2);
  });
});

describe("wharf gc on the data directory", () => {
  it("records a collection that deleted blobs; a dry run leaves no record", async () => {
    const { gcCommand } = await import("../../src/cli/gc.js");
    const { buildUpack, createUpackFixtures } = await import("../helpers/upack-fixtures.js");
    await createUpackFixtures(t).createFeed("gc-audited");
    const headers = { "x-apikey": t.adminKey };
    const payload = await buildUpack({ name: "gone", version: "1.0.0" });
    expect((await t.app.inject({ method: "PUT", url: "/upack/gc-audited/upload", headers, payload })).statusCode).toBe(
      201,
    );
    await t.app.inject({ method: "DELETE", url: "/api/management/feeds/delete/gc-audited", headers });
    const io = { config: t.config, out: () => undefined, err: () => undefined };
    const gcRows = () => cliRows().filter((row) => row.action === "cli gc");
    expect(await gcCommand(["--dry-run"], io)).toBe(0);
    expect(gcRows()).toHaveLength(0);
    expect(await gcCommand([], io)).toBe(0);
    expect(gcRows()).toEqual([expect.objectContaining({ address: "local", outcome: "success" })]);
  });
});
