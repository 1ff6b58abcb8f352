import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checked, type ConfigurationWorld, configurationWorld, localServer, role } from "../helpers/configuration.js";
import { readOne } from "../helpers/fixtures.js";

/**
 * Routine checks (issue 13 section 2: "every 60 minutes by default (configurable)"): every active
 * server whose drift mode is not `none` is checked on the interval, here 0.6 s
 * (WHARF_CONFIG_CHECK_MINUTES=0.01); inactive servers and those with drift mode `none` are not.
 * A server checked within the last half interval is skipped, so rounds do not pile up; the number
 * of collections kept per server stays bounded (KEEP_COLLECTIONS).
 */
let w: ConfigurationWorld;

beforeAll(async () => {
  w = await configurationWorld({ env: { WHARF_CONFIG_CHECK_MINUTES: "0.01" } });
  await role(w, "r", { items: [{ type: "file", path: "/routine.txt", content: "r\n" }] });
  await localServer(w, "watched", { roles: ["r"] });
  await localServer(w, "ignored", { roles: ["r"], drift: "none" });
  await localServer(w, "off", { roles: ["r"], active: false });
});
afterAll(async () => {
  await w?.close();
});

const collectionsOf = async (name: string) =>
  (
    await readOne<{ n: number }>(
      w.t.database,
      "SELECT count(*) AS n FROM config_collections WHERE server_id = (SELECT id FROM servers WHERE name = ?)",
      name,
    )
  )?.n;

describe("routine checks", () => {
  it("checks active servers with drift reporting on the interval, and leaves the others alone", async () => {
    const deadline = Date.now() + 10_000;
    while (((await collectionsOf("watched")) ?? 0) < 2) {
      if (Date.now() > deadline) throw new Error("no routine checks happened");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await collectionsOf("ignored")).toBe(0);
    expect(await collectionsOf("off")).toBe(0);
    const status = (await w.inedo("/api/configuration/status?server=watched")).json() as Record<string, unknown>;
    expect(["drifted", "executing"]).toContain(status.status);
    expect(((await w.inedo("/api/configuration/status?server=ignored")).json() as Record<string, unknown>).status).toBe(
      "unknown",
    );
  });

  it("keeps the last 20 checks of a server, with their items", async () => {
    for (let i = 0; i < 23; i++) await checked(w, "ignored");
    expect(await collectionsOf("ignored")).toBe(20);
    const items = await readOne(
      w.t.database,
      `SELECT count(*) AS n FROM config_collected_items WHERE collection_id IN
         (SELECT id FROM config_collections WHERE server_id = (SELECT id FROM servers WHERE name = 'ignored'))`,
    );
    expect(items).toEqual({ n: 20 });
    const orphans = await readOne(
      w.t.database,
      "SELECT count(*) AS n FROM config_collected_items WHERE collection_id NOT IN (SELECT id FROM config_collections)",
    );
    expect(orphans).toEqual({ n: 0 });
  });
});
