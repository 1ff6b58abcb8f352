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
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * What a server's desired state is made of (desired-state.ts): its roles in order, each role's
 * dependencies first, then its own items; the same item defined twice: the later one wins, in the
 * first one's place, and the job says so; variables server > roles > environments > global in
 * templates. And `package` items: a universal package from a Wharf feed installed into the
 * server's root, recorded as a package deployment (area C) naming the server.
 */
let w: ConfigurationWorld;
type Item = Record<string, unknown>;

beforeAll(async () => {
  w = await configurationWorld();
});
afterAll(async () => {
  await w?.close();
});

async function remediated(server: string): Promise<number> {
  const res = await w.inedo(`/api/configuration/remediate/server/${server}`);
  expect(res.statusCode, res.body).toBe(200);
  expect(await jobEnded(w, res.body), (await jobLog(w, Number(res.body))).join("\n")).toBe("completed");
  return Number(res.body);
}

describe("desired state", () => {
  it("orders dependencies first, lets the later definition win in place, and layers variables", async () => {
    const global = await w.t.app.inject({
      method: "POST",
      url: "/api/variables/global/Port",
      headers: { "x-apikey": w.t.adminKey, "content-type": "text/plain; charset=utf-8" },
      payload: "1000",
    });
    expect(global.statusCode, global.body).toBe(200);
    expect(
      (await w.admin("/api/infrastructure/environments/create/Stage", { variables: { Port: "2000", Env: "stage" } }))
        .statusCode,
    ).toBe(201);
    await role(w, "base", {
      variables: { Port: "3000", Who: "base" },
      items: [
        { type: "directory", path: "/srv", mode: "0755" },
        { type: "file", path: "/srv/who.txt", content: "base\n" },
      ],
    });
    await role(w, "web", {
      dependsOn: ["base"],
      variables: { Who: "web" },
      items: [{ type: "file", path: "/srv/app.conf", template: "port=$Port who=$Who env=$Env\n" }],
    });
    await localServer(w, "layered", {
      roles: ["web"],
      environments: ["Stage"],
      items: [{ type: "file", path: "/srv/who.txt", content: "server\n" }],
    });
    expect((await checked(w, "layered")).status).toBe("drifted");
    const items = (await w.inedo("/api/configuration/server/layered")).json() as Item[];
    expect(items.map((item) => [item.key, item.collectionRole])).toEqual([
      ["/srv", "base"],
      ["/srv/who.txt", null],
      ["/srv/app.conf", "web"],
    ]);
    const job = await remediated("layered");
    expect((await jobLog(w, job)).join("\n")).toContain("overrides the one of role base");
    expect(await fs.readFile(w.onDisk("layered", "/srv/who.txt"), "utf8")).toBe("server\n");
    // The role's Port wins over the environment's and the global one; web's Who over base's.
    expect(await fs.readFile(w.onDisk("layered", "/srv/app.conf"), "utf8")).toBe("port=3000 who=web env=stage\n");

    // A server's own variable wins over every role's: the template's output drifts, and is fixed.
    const updated = await w.admin("/api/infrastructure/servers/update/layered", { variables: { Port: "4000" } });
    expect(updated.statusCode, updated.body).toBe(200);
    expect((await checked(w, "layered")).status).toBe("drifted");
    await remediated("layered");
    expect(await fs.readFile(w.onDisk("layered", "/srv/app.conf"), "utf8")).toBe("port=4000 who=web env=stage\n");
    expect((await checked(w, "layered")).status).toBe("current");
  });
});

describe("package items", () => {
  it("installs a package from a Wharf feed (latest), then records the deployment naming the server", async () => {
    const feed = await w.admin("/api/management/feeds/create", { name: "apps", feedType: "universal" });
    expect(feed.statusCode, feed.body).toBe(201);
    for (const version of ["1.0.0", "1.1.0"]) {
      const bytes = await buildUpack({
        group: "acme",
        name: "site",
        version,
        files: { "index.html": `<h1>${version}</h1>`, "css/app.css": "body{}" },
      });
      const upload = await w.t.app.inject({
        method: "PUT",
        url: "/upack/apps/upload",
        headers: { "x-apikey": w.t.adminKey, "content-type": "application/zip" },
        payload: bytes,
      });
      expect(upload.statusCode, upload.body).toBe(201);
    }
    await localServer(w, "pkg1", {
      items: [{ type: "package", feed: "apps", group: "acme", name: "site", version: "latest", target: "/srv/site" }],
    });
    expect((await checked(w, "pkg1")).status).toBe("drifted");
    await remediated("pkg1");
    expect(await fs.readFile(w.onDisk("pkg1", "/srv/site/index.html"), "utf8")).toBe("<h1>1.1.0</h1>");
    expect(await fs.readFile(w.onDisk("pkg1", "/srv/site/css/app.css"), "utf8")).toBe("body{}");
    expect((await checked(w, "pkg1")).status).toBe("current");

    const records = await w.t.app.inject({
      method: "GET",
      url: "/api/package-deployment/?feed=apps&group=acme&name=site",
      headers: { "x-apikey": w.t.adminKey },
    });
    expect(records.statusCode, records.body).toBe(200);
    expect(records.json()).toEqual([expect.objectContaining({ version: "1.1.0", target: "pkg1" })]);

    // Changing a file of the installed package from outside is drift the next check sees.
    await fs.writeFile(w.onDisk("pkg1", "/srv/site/index.html"), "defaced");
    expect((await checked(w, "pkg1")).status).toBe("drifted");
  });
});
