import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ConfigurationWorld,
  configurationWorld,
  jobLog,
  localServer,
  role,
  SEED_DATE,
} from "../helpers/configuration.js";
import { readAll } from "../helpers/fixtures.js";

/**
 * InedoCore's "Remediate drift" operation replayed against a real `local` server (docs/compat.md
 * 8.1; clients.md 3.6; research next-areas.md 1.3): GET check -> wait 3 s -> GET status -> if
 * drifted GET remediate/server/<name> -> GET remediate/status?token= while pending or running ->
 * success only on `completed`. Only X-ApiKey and a product User-Agent are sent. The 3 s wait is
 * real (it is what a check of a local server must finish within); the token is polled faster than
 * InedoCore's 3 s, which changes nothing but the test's duration.
 */
const INEDOCORE_CHECK_WAIT_MS = 3_000;
const TOKEN_POLL_MS = 50;

let w: ConfigurationWorld;
const logo = randomBytes(4096);

beforeAll(async () => {
  w = await configurationWorld();
  await role(w, "web", {
    items: [
      { type: "directory", path: "/srv/app", mode: "0755" },
      { type: "file", path: "/srv/app/app.conf", template: "port=$Port\n", mode: "0644" },
      { type: "file", path: "/srv/app/logo.bin", contentBase64: logo.toString("base64"), mode: "0640" },
      { type: "file", path: "/srv/app/secret.env", content: "TOKEN=s3cr3t-value\n", mode: "0600", sensitive: true },
    ],
  });
  await localServer(w, "web1", {
    roles: ["web"],
    variables: { Port: "8080" },
    items: [{ type: "file", path: "/etc/motd", content: "managed by wharf\n" }],
  });
});
afterAll(async () => {
  await w?.close();
});

describe("InedoCore's Remediate drift flow on a local server", () => {
  it("checks, reads drifted after 3 s, remediates, polls the token to completed, ends current", async () => {
    const check = await w.inedo("/api/configuration/check?server=web1");
    expect(check.statusCode).toBe(200);
    expect(check.body).toBe("");

    await new Promise((resolve) => setTimeout(resolve, INEDOCORE_CHECK_WAIT_MS));
    const statusRes = await w.inedo("/api/configuration/status?server=web1");
    expect(statusRes.statusCode).toBe(200);
    expect(statusRes.headers["content-type"]).toMatch(/^application\/json/);
    const status = statusRes.json() as Record<string, unknown>;
    expect(Object.keys(status).sort()).toEqual(["collectionDate", "latestCollectionId", "name", "status", "type"]);
    expect(status).toMatchObject({ type: "server", name: "web1", status: "drifted" });
    expect(status.collectionDate).toMatch(SEED_DATE);
    expect(typeof status.latestCollectionId).toBe("number");

    const remediate = await w.inedo("/api/configuration/remediate/server/web1");
    expect(remediate.statusCode).toBe(200);
    expect(remediate.headers["content-type"]).toMatch(/^text\/plain/);
    const token = remediate.body;
    expect(token).toMatch(/^\d+$/);

    let word: string;
    for (;;) {
      const res = await w.inedo(`/api/configuration/remediate/status?token=${token}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^text\/plain/);
      word = res.body;
      expect(["pending", "running", "completed", "faulted", "disabled"]).toContain(word);
      if (word !== "pending" && word !== "running") break;
      await new Promise((resolve) => setTimeout(resolve, TOKEN_POLL_MS));
    }
    expect(word, (await jobLog(w, Number(token))).join("\n")).toBe("completed");

    const after = (await w.inedo("/api/configuration/status?server=web1")).json() as Record<string, unknown>;
    expect(after).toMatchObject({ type: "server", name: "web1", status: "current" });
    expect(after.latestCollectionId).toBeGreaterThan(status.latestCollectionId as number);

    // What the items declared is now on disk, byte for byte and mode for mode.
    expect(await fs.readFile(w.onDisk("web1", "/srv/app/app.conf"), "utf8")).toBe("port=8080\n");
    expect((await fs.readFile(w.onDisk("web1", "/srv/app/logo.bin"))).equals(logo)).toBe(true);
    expect(await fs.readFile(w.onDisk("web1", "/srv/app/secret.env"), "utf8")).toBe("TOKEN=s3cr3t-value\n");
    expect(await fs.readFile(w.onDisk("web1", "/etc/motd"), "utf8")).toBe("managed by wharf\n");
    expect((await fs.stat(w.onDisk("web1", "/srv/app/logo.bin"))).mode & 0o777).toBe(0o640);
    expect((await fs.stat(w.onDisk("web1", "/srv/app/secret.env"))).mode & 0o777).toBe(0o600);
    expect((await fs.stat(w.onDisk("web1", "/srv/app"))).mode & 0o777).toBe(0o755);

    // The job kept a log of its changes, and the sensitive content appears nowhere.
    const log = (await jobLog(w, Number(token))).join("\n");
    expect(log).toContain("/srv/app/logo.bin");
    expect(log).not.toContain("s3cr3t");
    const items = await w.inedo("/api/configuration/server/web1");
    expect(items.body).not.toContain("s3cr3t");
    const collected = await readAll(w.t.database, "SELECT differences FROM config_collected_items");
    expect(JSON.stringify(collected)).not.toContain("s3cr3t");
  });
});
