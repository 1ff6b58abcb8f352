import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSystemKey, readOne } from "../helpers/fixtures.js";
import {
  checked,
  type ConfigurationWorld,
  configurationWorld,
  heldAgentServer,
  jobEnded,
  localServer,
  manualClock,
  role,
  SEED_DATE,
} from "../helpers/configuration.js";
import { writeFromOutside } from "../helpers/app.js";
import { expectText } from "../helpers/responses.js";

/**
 * The seed's five `/api/configuration` endpoints beyond the happy path (docs/seed-api.md B;
 * docs/compat.md 8.1): field presence and date formats of status objects, every 400, 403 and 404,
 * one check per server at a time, and a remediation whose `start` lies ahead, under a clock the
 * test moves (it stands still otherwise: every date below is the clock's).
 */
const T0 = new Date("2030-01-01T00:00:00.900Z");
const clock = manualClock(T0);
let w: ConfigurationWorld;
type Json = Record<string, unknown>;

beforeAll(async () => {
  w = await configurationWorld({ clock });
  await role(w, "web", { items: [{ type: "file", path: "/index.html", content: "<h1>hi</h1>\n" }] });
  await role(w, "empty", {});
  expect((await w.admin("/api/infrastructure/environments/create/Prod", {})).statusCode).toBe(201);
  await localServer(w, "alpha", { roles: ["web"], environments: ["Prod"] });
  await localServer(w, "idle", { roles: ["web"], active: false });
  await localServer(w, "broken", {});
});
afterAll(async () => {
  await w?.close();
});

const status = async (query: string, key?: string) => {
  const res = await w.inedo(`/api/configuration/status${query}`, key);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Json | Json[];
};
const collections = async (server: string) =>
  Number(
    (
      await readOne<{ n: number }>(
        w.t.database,
        "SELECT count(*) AS n FROM config_collections WHERE server_id = (SELECT id FROM servers WHERE name = ?)",
        server,
      )
    )?.n,
  );
const executingChecks = async () =>
  Number(
    (
      await readOne<{ n: number }>(
        w.t.database,
        "SELECT count(*) AS n FROM config_collections WHERE status = 'executing'",
      )
    )?.n,
  );
const serverId = async (name: string) =>
  (await readOne<{ id: number }>(w.t.database, "SELECT id FROM servers WHERE name = ?", name))?.id;

describe("status objects", () => {
  it("has exactly the seed's fields: unknown before any check, latestCollectionId null only for servers", async () => {
    expect(await status("?server=alpha")).toEqual({
      type: "server",
      name: "alpha",
      status: "unknown",
      collectionDate: null,
      latestCollectionId: null,
    });
    expect(await status("?role=EMPTY")).toEqual({
      type: "role",
      name: "empty",
      status: "unknown",
      collectionDate: null,
    });
    expect(await status("?server=idle")).toMatchObject({ status: "disabled" });
    expect(await status("?environment=prod")).toEqual({
      type: "environment",
      name: "Prod",
      status: "unknown",
      collectionDate: null,
    });
  });

  it("dates a check with the clock as yyyy-MM-ddTHH:mm:ss, and gives errorText only on error", async () => {
    const alpha = await checked(w, "alpha");
    expect(alpha).toEqual({
      type: "server",
      name: "alpha",
      status: "drifted",
      collectionDate: "2030-01-01T00:00:00",
      latestCollectionId: expect.any(Number),
    });
    expect(await status("?role=web")).toEqual({
      type: "role",
      name: "web",
      status: "drifted",
      collectionDate: "2030-01-01T00:00:00",
    });

    // A root that is a file cannot be reached at all: the check ends in error, with the reason.
    await fs.writeFile(w.onDisk("broken", ""), "not a directory");
    const broken = await checked(w, "broken");
    expect(broken.status).toBe("error");
    expect(broken.errorText).toEqual(expect.any(String));
    expect(Object.keys(broken).sort()).toEqual([
      "collectionDate",
      "errorText",
      "latestCollectionId",
      "name",
      "status",
      "type",
    ]);

    const all = (await status("")) as Json[];
    expect(all.map((s) => `${s.type}:${s.name}`)).toEqual([
      "server:alpha",
      "server:broken",
      "server:idle",
      "role:empty",
      "role:web",
      "environment:Prod",
    ]);
    for (const object of all) {
      if (object.collectionDate !== null) expect(object.collectionDate).toMatch(SEED_DATE);
      expect("latestCollectionId" in object).toBe(object.type === "server");
      expect("errorText" in object).toBe(object.status === "error");
      expect("remediationId" in object).toBe(false);
    }
    // The role's status counts only its active servers (idle is inactive, never checked).
    expect(all.find((s) => s.name === "web")).toMatchObject({ status: "drifted" });
  });

  it("answers the items of the last check with collectionRole", async () => {
    const res = await w.inedo("/api/configuration/server/ALPHA");
    expect(res.statusCode).toBe(200);
    const items = res.json() as Json[];
    expect(items).toEqual([
      {
        type: "file",
        key: "/index.html",
        status: "drifted",
        collectionDate: "2030-01-01T00:00:00",
        collectionId: expect.any(Number),
        collectionRole: "web",
        differences: [{ property: "exists", desired: true, actual: false }],
      },
    ]);
    expect(await (await w.inedo("/api/configuration/server/idle")).json()).toEqual([]);
  });
});

describe("errors of the seed", () => {
  it("400 for another entity type or two entities, 404 for an unknown name", async () => {
    expectText(await w.inedo("/api/configuration/status?application=x"), 400, "application");
    expectText(await w.inedo("/api/configuration/status?server=alpha&role=web"), 400);
    expectText(await w.inedo("/api/configuration/status?server="), 400);
    expectText(await w.inedo("/api/configuration/status?server=nope"), 404, "nope");
    expectText(await w.inedo("/api/configuration/status?role=nope"), 404);
    expectText(await w.inedo("/api/configuration/status?environment=nope"), 404);
    expectText(await w.inedo("/api/configuration/server/nope"), 404);
    expectText(await w.inedo("/api/configuration/check?server=nope"), 404);
    expectText(await w.inedo("/api/configuration/check?planet=earth"), 400);
  });

  it("403 in plain text for an invalid key or one without the configuration scope; other key transports work", async () => {
    expectText(await w.inedo("/api/configuration/status?server=alpha", "not-a-key"), 403);
    const feedsOnly = await createSystemKey(w.t.database, ["feeds"]);
    expectText(await w.inedo("/api/configuration/status?server=alpha", feedsOnly), 403);
    expectText(await w.inedo("/api/configuration/remediate/server/alpha", feedsOnly), 403);
    // The seed's own form: key in the query string, by POST as well as GET.
    const byQuery = await w.t.app.inject({
      method: "POST",
      url: `/api/configuration/status?server=alpha&key=${w.configKey}`,
    });
    expect(byQuery.statusCode).toBe(200);
    const byBasic = await w.t.app.inject({
      method: "GET",
      url: "/api/configuration/status?server=alpha",
      headers: { authorization: `Basic ${Buffer.from(`api:${w.configKey}`).toString("base64")}` },
    });
    expect(byBasic.statusCode).toBe(200);
  });

  it("remediate: 400 for a bad type, start or simulate, 404 for an unknown entity; status: 400 for a bad token", async () => {
    expectText(await w.inedo("/api/configuration/remediate/planet/alpha"), 400);
    expectText(await w.inedo("/api/configuration/remediate/server/nope"), 404, "nope");
    expectText(await w.inedo("/api/configuration/remediate/role/nope"), 404);
    expectText(await w.inedo("/api/configuration/remediate/server/alpha?start=tomorrow"), 400, "start");
    expectText(await w.inedo("/api/configuration/remediate/server/alpha?start=2030-02-30T00:00:00"), 400, "start");
    expectText(await w.inedo("/api/configuration/remediate/server/alpha?simulate=maybe"), 400, "simulate");
    expectText(await w.inedo("/api/configuration/remediate/status"), 400, "token");
    expectText(await w.inedo("/api/configuration/remediate/status?token=abc"), 400);
    expectText(await w.inedo("/api/configuration/remediate/status?token=999999"), 400);
    // No job was created by any of these.
    expect(await readOne(w.t.database, "SELECT count(*) AS n FROM jobs")).toEqual({ n: 0 });
  });
});

describe("one check per server at a time", () => {
  it("joins a running check instead of starting another", async () => {
    // The check is held open by its agent (the test) until every request has been answered: all
    // five provably arrive while it runs, and none is left running for the next test.
    const motd = { type: "file", path: "/etc/motd", content: "hi\n" };
    const agent = await heldAgentServer(w, "held", [motd]);
    const before = await collections("held");
    const answers = await Promise.all(Array.from({ length: 5 }, () => w.inedo("/api/configuration/check?server=held")));
    expect(answers.map((res) => res.statusCode)).toEqual([200, 200, 200, 200, 200]);
    const work = await agent.nextWork();
    expect(work.kind).toBe("check");
    expect(await status("?server=held")).toMatchObject({ status: "executing" });
    expect(await collections("held")).toBe(before + 1);

    await agent.report(work.id, [{ type: "file", key: "/etc/motd", role: null, status: "current", differences: [] }]);
    expect(await w.settled("held")).toMatchObject({ status: "current" });
    expect(await collections("held")).toBe(before + 1);
    expect(await executingChecks()).toBe(0);
  });

  it("waits for a check another process is running (the unique index), and starts none meanwhile", async () => {
    // A server of its own: the requests joined here may still be polling (FOREIGN_POLL_MS) for a
    // moment after the test, and must not be joined by the next test's check of alpha.
    await localServer(w, "elsewhere");
    await writeFromOutside(
      w.t,
      "INSERT INTO config_collections (server_id, status, started_at) VALUES (?, 'executing', ?)",
      await serverId("elsewhere"),
      clock.now().toISOString(),
    );
    const before = await collections("elsewhere");
    for (let i = 0; i < 3; i++) {
      expect((await w.inedo("/api/configuration/check?server=elsewhere")).statusCode).toBe(200);
    }
    expect(await status("?server=elsewhere")).toMatchObject({ status: "executing" });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await collections("elsewhere")).toBe(before);
    await writeFromOutside(
      w.t,
      "UPDATE config_collections SET status = 'completed', ended_at = ? WHERE status = 'executing'",
      clock.now().toISOString(),
    );
    expect((await w.settled("elsewhere")).status).not.toBe("executing");
    // The joined requests notice within a poll of the other process's check (250 ms), starting none.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await collections("elsewhere")).toBe(before);
    expect(await executingChecks()).toBe(0);
  });
});

describe("a remediation that starts later", () => {
  it("stays pending (pendingRemediation with its date and id) until the clock passes its start, then runs", async () => {
    expect((await checked(w, "alpha")).status).toBe("drifted");
    const res = await w.inedo("/api/configuration/remediate/server/alpha?start=2030-01-01T00:00:01&job=Later");
    expect(res.statusCode).toBe(200);
    const token = res.body;
    expect((await w.inedo(`/api/configuration/remediate/status?token=${token}`)).body).toBe("pending");
    const pending = { remediationDate: "2030-01-01T00:00:01", remediationId: Number(token) };
    expect(await status("?server=alpha")).toMatchObject({ status: "pendingRemediation", ...pending });
    expect(await status("?role=web")).toMatchObject({ status: "pendingRemediation", ...pending });
    expect(await status("?environment=Prod")).toMatchObject({ status: "pendingRemediation", ...pending });
    expect((await (await w.inedo("/api/configuration/server/alpha")).json()) as Json[]).toEqual([
      expect.objectContaining(pending),
    ]);

    // Real time passes, the clock does not: still pending.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await w.inedo(`/api/configuration/remediate/status?token=${token}`)).body).toBe("pending");
    expect(await fs.stat(w.onDisk("alpha", "/index.html")).catch(() => undefined)).toBeUndefined();

    clock.advance(1_000);
    expect(await jobEnded(w, token)).toBe("completed");
    expect(await fs.readFile(w.onDisk("alpha", "/index.html"), "utf8")).toBe("<h1>hi</h1>\n");
    const after = (await status("?server=alpha")) as Json;
    expect(after.status).toBe("current");
    expect(after).not.toHaveProperty("remediationDate");
    expect(after).not.toHaveProperty("remediationId");
  });
});

describe("a local server's root", () => {
  it("is checked again at every check: a root swapped for a link out of WHARF_DEPLOY_ROOT is refused", async () => {
    const outside = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-config-outside-"));
    try {
      await localServer(w, "swapped", { roles: ["web"] });
      await fs.symlink(outside, w.onDisk("swapped", ""));
      const status = await checked(w, "swapped");
      expect(status.status).toBe("error");
      expect(status.errorText).toContain("WHARF_DEPLOY_ROOT");
      expect(await fs.readdir(outside)).toEqual([]);
    } finally {
      await fs.rm(outside, { recursive: true, force: true });
    }
  });
});
