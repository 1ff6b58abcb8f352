import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checked,
  type ConfigurationWorld,
  configurationWorld,
  jobEnded,
  jobLog,
  localServer,
  role,
} from "../helpers/configuration.js";
import { readAll, readOne } from "../helpers/fixtures.js";

/**
 * Real drift (issue 13 section 5): files inside a local server's root are changed, deleted and
 * chmodded from outside Wharf; the next check reports exactly those items drifted with what
 * differs; simulate changes nothing; a role's remediation touches only its items; a remediation
 * restores the rest byte for byte and checks again.
 */
let w: ConfigurationWorld;
const blob = randomBytes(2048);
const sha = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
type Item = Record<string, unknown>;

beforeAll(async () => {
  w = await configurationWorld();
  await role(w, "app", {
    items: [
      { type: "directory", path: "/srv/site", mode: "0755" },
      { type: "file", path: "/srv/site/a.txt", content: "alpha\n", mode: "0644" },
      { type: "file", path: "/srv/site/b.bin", contentBase64: blob.toString("base64"), mode: "0640" },
      { type: "file", path: "/srv/site/c.conf", content: "gamma=1\n", mode: "0600" },
    ],
  });
  await role(w, "ops", { items: [{ type: "file", path: "/etc/ops.conf", content: "ops\n", mode: "0644" }] });
  await localServer(w, "drift1", { roles: ["app", "ops"] });
});
afterAll(async () => {
  await w?.close();
});

const file = (itemPath: string) => w.onDisk("drift1", itemPath);

const check = (server = "drift1") => checked(w, server);

async function remediate(url: string): Promise<{ token: string; word: string }> {
  const res = await w.inedo(url);
  expect(res.statusCode, res.body).toBe(200);
  const token = res.body;
  return { token, word: await jobEnded(w, token) };
}

const items = async () => (await w.inedo("/api/configuration/server/drift1")).json() as Item[];
const drifted = (list: Item[]) => list.filter((item) => item.status === "drifted");

describe("drift found by a real check", () => {
  it("lays the configuration down once, then reads current", async () => {
    expect((await check()).status).toBe("drifted");
    const { token, word } = await remediate("/api/configuration/remediate/server/drift1");
    expect(word, (await jobLog(w, Number(token))).join("\n")).toBe("completed");
    expect((await w.settled("drift1")).status).toBe("current");
    const list = await items();
    expect(list.map((item) => [item.type, item.key, item.status, item.collectionRole])).toEqual([
      ["directory", "/srv/site", "current", "app"],
      ["file", "/srv/site/a.txt", "current", "app"],
      ["file", "/srv/site/b.bin", "current", "app"],
      ["file", "/srv/site/c.conf", "current", "app"],
      ["file", "/etc/ops.conf", "current", "ops"],
    ]);
    // The closing check belongs to the job.
    const closing = await readOne<{ job_id: number | null }>(
      w.t.database,
      "SELECT job_id FROM config_collections WHERE server_id = (SELECT id FROM servers WHERE name = 'drift1') ORDER BY id DESC LIMIT 1",
    );
    expect(closing?.job_id).toBe(Number(token));
  });

  it("reports exactly the files changed, deleted and chmodded from outside, with what differs", async () => {
    await fs.writeFile(file("/srv/site/a.txt"), "tampered\n");
    await fs.rm(file("/srv/site/b.bin"));
    await fs.chmod(file("/srv/site/c.conf"), 0o666);
    expect((await check()).status).toBe("drifted");
    const list = await items();
    expect(drifted(list).map((item) => item.key)).toEqual(["/srv/site/a.txt", "/srv/site/b.bin", "/srv/site/c.conf"]);
    const byKey = new Map(list.map((item) => [item.key, item]));
    expect(byKey.get("/srv/site/a.txt")?.differences).toContainEqual({
      property: "sha256",
      desired: sha("alpha\n"),
      actual: sha("tampered\n"),
    });
    expect(byKey.get("/srv/site/b.bin")?.differences).toEqual([{ property: "exists", desired: true, actual: false }]);
    expect(byKey.get("/srv/site/c.conf")?.differences).toEqual([{ property: "mode", desired: "0600", actual: "0666" }]);
    for (const item of list.filter((i) => i.status === "current")) expect(item).not.toHaveProperty("differences");
  });

  it("simulates: says what it would change, changes nothing, completes", async () => {
    const { token, word } = await remediate("/api/configuration/remediate/server/drift1?simulate=true");
    expect(word).toBe("completed");
    const log = (await jobLog(w, Number(token))).join("\n");
    expect(log).toMatch(/would .*\/srv\/site\/a\.txt|\/srv\/site\/a\.txt: would/);
    expect(await fs.readFile(file("/srv/site/a.txt"), "utf8")).toBe("tampered\n");
    await expect(fs.stat(file("/srv/site/b.bin"))).rejects.toMatchObject({ code: "ENOENT" });
    expect((await fs.stat(file("/srv/site/c.conf"))).mode & 0o777).toBe(0o666);
    expect((await w.settled("drift1")).status).toBe("drifted");
    expect(
      await readOne(w.t.database, "SELECT simulate FROM config_remediations WHERE job_id = ?", Number(token)),
    ).toEqual({
      simulate: 1,
    });
  });

  it("remediates a role's items only when the role is the target", async () => {
    await fs.writeFile(file("/etc/ops.conf"), "changed\n");
    await check();
    const { word } = await remediate("/api/configuration/remediate/role/ops");
    expect(word).toBe("completed");
    expect(await fs.readFile(file("/etc/ops.conf"), "utf8")).toBe("ops\n");
    expect(await fs.readFile(file("/srv/site/a.txt"), "utf8")).toBe("tampered\n");
    const list = await items();
    expect(drifted(list).map((item) => item.key)).toEqual(["/srv/site/a.txt", "/srv/site/b.bin", "/srv/site/c.conf"]);
    const ops = (await w.inedo("/api/configuration/status?role=ops")).json() as Item;
    expect(ops).toMatchObject({ type: "role", name: "ops", status: "current" });
    expect(ops).not.toHaveProperty("latestCollectionId");
    expect(((await w.inedo("/api/configuration/status?role=app")).json() as Item).status).toBe("drifted");
  });

  it("restores every drifted file byte for byte and mode for mode, then reads current", async () => {
    const { token, word } = await remediate("/api/configuration/remediate/server/drift1?job=Nightly");
    expect(word, (await jobLog(w, Number(token))).join("\n")).toBe("completed");
    expect(await fs.readFile(file("/srv/site/a.txt"), "utf8")).toBe("alpha\n");
    expect((await fs.readFile(file("/srv/site/b.bin"))).equals(blob)).toBe(true);
    expect((await fs.stat(file("/srv/site/b.bin"))).mode & 0o777).toBe(0o640);
    expect((await fs.stat(file("/srv/site/c.conf"))).mode & 0o777).toBe(0o600);
    expect((await w.settled("drift1")).status).toBe("current");
    expect(drifted(await items())).toEqual([]);
    expect(await readOne(w.t.database, "SELECT name FROM config_remediations WHERE job_id = ?", Number(token))).toEqual(
      {
        name: "Nightly",
      },
    );
  });

  it("remediates drift made after the last check: the job looks again before it changes anything", async () => {
    expect((await check()).status).toBe("current");
    await fs.writeFile(file("/srv/site/a.txt"), "changed after the check\n");
    const { token, word } = await remediate("/api/configuration/remediate/server/drift1");
    expect(word, (await jobLog(w, Number(token))).join("\n")).toBe("completed");
    expect(await fs.readFile(file("/srv/site/a.txt"), "utf8")).toBe("alpha\n");
    expect((await jobLog(w, Number(token))).join("\n")).toMatch(/\/srv\/site\/a\.txt/);
    expect((await w.settled("drift1")).status).toBe("current");
  });

  it("remediates on its own a server whose drift mode is automaticallyRedmediate", async () => {
    await role(w, "auto", { items: [{ type: "file", path: "/auto.txt", content: "auto\n" }] });
    await localServer(w, "auto1", { roles: ["auto"], drift: "automaticallyRedmediate" });
    await check("auto1");
    const deadline = Date.now() + 10_000;
    for (;;) {
      const found = await fs.readFile(w.onDisk("auto1", "/auto.txt"), "utf8").catch(() => undefined);
      if (found === "auto\n") break;
      if (Date.now() > deadline) throw new Error("no automatic remediation");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const jobs = await readAll(w.t.database, "SELECT r.name FROM config_remediations r WHERE r.entity_name = 'auto1'");
    expect(jobs).toEqual([{ name: "Automatic remediation" }]);
  });
});
