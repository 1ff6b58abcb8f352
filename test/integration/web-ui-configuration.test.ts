import fs from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checked,
  type ConfigurationWorld,
  configurationWorld,
  jobEnded,
  localServer,
  role,
} from "../helpers/configuration.js";
import { createUser, execute, grant, readAll, readOne } from "../helpers/fixtures.js";
import { UiClient } from "../helpers/ui-client.js";

/**
 * The configuration pages of the web UI (issue 16 section 1; docs/seed-api.md B): /configuration,
 * a server's, a role's and an environment's page, check and remediate (now, later, simulated) and
 * a remediation job's log. Real checks and remediations of a local server rooted in a temporary
 * directory (test/helpers/configuration.ts). Viewers: Anonymous, a user without any privilege, one
 * with Infrastructure_View and one with Infrastructure_Manage, each signed in through the form.
 */

const PASSWORD = "config-password-1";
/** A file name a browser would run as markup if it were not escaped. */
const HOSTILE_PATH = `/srv/<img src=x onerror=alert(1)>"&'.txt`;
const HOSTILE_JOB = `<script>alert("job")</script>`;
const ESCAPED_PATH = "/srv/&lt;img src=x onerror=alert(1)&gt;&quot;&amp;&#39;.txt";

let w: ConfigurationWorld;
let viewer: UiClient;
let manager: UiClient;
let stranger: UiClient;
let anonymous: UiClient;

beforeAll(async () => {
  w = await configurationWorld();
  await role(w, "web", {
    items: [
      { type: "file", path: "/srv/site/a.txt", content: "alpha\n", mode: "0644" },
      { type: "file", path: HOSTILE_PATH, content: "x\n", mode: "0644" },
    ],
  });
  await role(w, "ops", { dependsOn: ["web"], items: [] });
  expect((await w.admin("/api/infrastructure/environments/create/Prod", {})).statusCode).toBe(201);
  await localServer(w, "web1", { roles: ["ops"], environments: ["Prod"] });
  await localServer(w, "idle1", {});
  await grant(w.t.database, {
    user: await createUser(w.t.database, "vera", PASSWORD),
    attributes: ["Infrastructure_View"],
  });
  await grant(w.t.database, {
    user: await createUser(w.t.database, "mona", PASSWORD),
    attributes: ["Infrastructure_View", "Infrastructure_Manage"],
  });
  await createUser(w.t.database, "sam", PASSWORD);
  viewer = new UiClient(w.t);
  manager = new UiClient(w.t);
  stranger = new UiClient(w.t);
  anonymous = new UiClient(w.t);
  await viewer.signIn("vera", PASSWORD);
  await manager.signIn("mona", PASSWORD);
  await stranger.signIn("sam", PASSWORD);
  // The files do not exist yet: the first check finds both items drifted.
  expect((await checked(w, "web1")).status).toBe("drifted");
}, 30_000);

afterAll(async () => {
  await w?.close();
});

const jobCount = async () =>
  (await readOne<{ n: number }>(w.t.database, "SELECT count(*) AS n FROM config_remediations"))?.n;

/** The job number a remediate form's 303 points at. */
function jobOf(location: unknown): number {
  const match = /^\/configuration\/jobs\/(\d+)$/.exec(String(location));
  expect(match, String(location)).not.toBeNull();
  return Number(match?.[1]);
}

describe("who may look", () => {
  it("sends Anonymous to sign in and shows a user without Infrastructure_View a 403 page", async () => {
    const res = await anonymous.get("/configuration/servers/web1");
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/sign-in?next=%2Fconfiguration%2Fservers%2Fweb1");
    for (const url of ["/configuration", "/configuration/servers/web1", "/configuration/roles/web"]) {
      const refused = await stranger.get(url);
      expect(refused.statusCode, url).toBe(403);
      expect(refused.body).not.toContain("web1");
    }
  });

  it("answers 404 pages for what does not exist", async () => {
    for (const url of [
      "/configuration/servers/nope",
      "/configuration/roles/nope",
      "/configuration/environments/nope",
      "/configuration/widgets/web1",
      "/configuration/jobs/999999",
      "/configuration/jobs/1e3",
    ]) {
      const res = await viewer.get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
    }
  });
});

describe("drift at a glance", () => {
  it("lists servers, roles and environments with their status, and counts servers by status", async () => {
    const res = await viewer.get("/configuration");
    expect(res.statusCode).toBe(200);
    const html = res.body;
    expect(html).toMatch(
      /<a href="\/configuration\/servers\/web1">web1<\/a><\/td>\s*<td><span class="config-status config-status-drifted">Drifted<\/span>/,
    );
    expect(html).toMatch(
      /<a href="\/configuration\/servers\/idle1">idle1<\/a><\/td>\s*<td><span class="config-status config-status-unknown">Unknown<\/span>/,
    );
    expect(html).toMatch(/<a href="\/configuration\/roles\/web">web<\/a><\/td>\s*<td><span[^>]*>Drifted</);
    expect(html).toMatch(/<a href="\/configuration\/environments\/Prod">Prod<\/a><\/td>\s*<td><span[^>]*>Drifted</);
    expect(html).toMatch(/config-status-drifted">Drifted<\/span> 1<\/li>/);
    expect(html).toMatch(/config-status-unknown">Unknown<\/span> 1<\/li>/);
    // A viewer gets no button the API would refuse.
    expect(html).not.toContain("Check all servers now");
  });

  it("shows a server's roles, environments, last check, and each item's desired against actual state", async () => {
    const res = await viewer.get("/configuration/servers/web1");
    expect(res.statusCode).toBe(200);
    const html = res.body;
    expect(html).toContain('<a href="/configuration/roles/ops">ops</a>');
    expect(html).toContain('<a href="/configuration/environments/Prod">Prod</a>');
    expect(html).toMatch(/<dt>Last check<\/dt><dd>\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/dd>/);
    expect(html).toContain("2 of 2 items differ from the desired state.");
    expect(html).toContain("<code>/srv/site/a.txt</code>");
    // What differs: the property, desired, actual.
    expect(html).toMatch(/<li>exists: <code>true<\/code> → <code>false<\/code><\/li>/);
    // Stored as a path, rendered as text.
    expect(html).toContain(`<code>${ESCAPED_PATH}</code>`);
    expect(html).not.toContain("<img src=x");
    expect(html).not.toContain('action="/configuration/servers/web1/check"');
  });

  it("shows a role's servers (through dependencies too) and an environment's", async () => {
    const web = await viewer.get("/configuration/roles/web");
    expect(web.statusCode).toBe(200);
    expect(web.body).toMatch(/<a href="\/configuration\/servers\/web1">web1<\/a><\/td>\s*<td><span[^>]*>Drifted</);
    // Only a manager sees the forms; a role's remediation says it touches the role's items only.
    expect(web.body).not.toContain("/configuration/roles/web/remediate");
    const managed = await manager.get("/configuration/roles/web");
    expect(managed.body).toContain('action="/configuration/roles/web/remediate"');
    expect(managed.body).toContain("<legend>Remediate this role&#39;s items on its servers</legend>");
    const ops = await viewer.get("/configuration/roles/ops");
    expect(ops.body).toContain('<dt>Depends on</dt><dd><a href="/configuration/roles/web">web</a>');
    const prod = await viewer.get("/configuration/environments/Prod");
    expect(prod.statusCode).toBe(200);
    expect(prod.body).toContain('<a href="/configuration/servers/web1">web1</a>');
    expect(prod.body).not.toContain("idle1");
  });
});

describe("check and remediate", () => {
  it("refuses a viewer forging the forms (403, nothing started) and a post without its token (403)", async () => {
    const before = await jobCount();
    for (const url of [
      "/configuration/check",
      "/configuration/servers/web1/check",
      "/configuration/servers/web1/remediate",
      "/configuration/roles/web/remediate",
    ]) {
      const forged = await viewer.post(url, [["simulate", "true"]], "/configuration");
      expect(forged.statusCode, url).toBe(403);
      const anonymousPost = await anonymous.postWithoutToken(url);
      expect(anonymousPost.statusCode, url).toBe(403);
      const crossSite = await manager.postWithoutToken(url, [["simulate", "true"]]);
      expect(crossSite.statusCode, url).toBe(403);
    }
    expect(await jobCount()).toBe(before);
  });

  it("simulates a remediation: the job's log says what would change and nothing changes", async () => {
    const page = await manager.get("/configuration/servers/web1");
    expect(page.body).toContain('action="/configuration/servers/web1/check"');
    expect(page.body).toContain('action="/configuration/servers/web1/remediate"');
    const res = await manager.post("/configuration/servers/web1/remediate", [
      ["job", HOSTILE_JOB],
      ["simulate", "true"],
    ]);
    expect(res.statusCode, res.body).toBe(303);
    const id = jobOf(res.headers.location);
    expect(await jobEnded(w, String(id))).toBe("completed");
    await expect(fs.stat(w.onDisk("web1", "/srv/site/a.txt"))).rejects.toThrow();

    const job = await viewer.get(`/configuration/jobs/${id}`);
    expect(job.statusCode).toBe(200);
    expect(job.body).toContain("&lt;script&gt;alert(&quot;job&quot;)&lt;/script&gt;");
    expect(job.body).not.toContain(HOSTILE_JOB);
    expect(job.body).toContain("(simulated: nothing is changed)");
    expect(job.body).toContain('config-state-completed">Completed');
    expect(job.body).toContain("would be made; nothing was changed.");
    // A log line naming the hostile file is text too.
    expect(job.body).toContain("onerror=alert(1)&gt;");
    expect(job.body).not.toContain("<img");
    // The job is listed on the server's page and the overview.
    const overview = await viewer.get("/configuration");
    expect(overview.body).toContain(`<a href="/configuration/jobs/${id}">&lt;script&gt;`);
  });

  it("remediates now: the job runs, checks again, and the server reads current", async () => {
    const res = await manager.post("/configuration/environments/Prod/remediate", [["job", "Lay it down"]]);
    expect(res.statusCode, res.body).toBe(303);
    const id = jobOf(res.headers.location);
    expect(await jobEnded(w, String(id))).toBe("completed");
    expect(await fs.readFile(w.onDisk("web1", "/srv/site/a.txt"), "utf8")).toBe("alpha\n");
    expect((await w.settled("web1")).status).toBe("current");
    const page = await viewer.get("/configuration/servers/web1");
    expect(page.body).toContain("0 of 2 items differ from the desired state.");
    const env = await viewer.get("/configuration/environments/Prod");
    expect(env.body).toContain(`<a href="/configuration/jobs/${id}">Lay it down</a>`);
  });

  it("checks now: drift made outside Wharf shows with what differs", async () => {
    await fs.chmod(w.onDisk("web1", "/srv/site/a.txt"), 0o600);
    const collections = async () =>
      (await readOne<{ n: number }>(w.t.database, "SELECT count(*) AS n FROM config_collections"))?.n;
    const before = await collections();
    const res = await manager.post("/configuration/servers/web1/check", [], "/configuration/servers/web1");
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/configuration/servers/web1?checked");
    const deadline = Date.now() + 5_000;
    while ((await collections()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect((await w.settled("web1")).status).toBe("drifted");
    const page = await manager.get("/configuration/servers/web1?checked");
    expect(page.body).toContain("Check started");
    expect(page.body).toContain("1 of 2 items differ from the desired state.");
    expect(page.body).toMatch(/<li>mode: <code>0?644<\/code> → <code>0?600<\/code><\/li>/);
  });

  it("remediates at a given time: the job waits, its page says until when", async () => {
    const res = await manager.post("/configuration/roles/web/remediate", [["start", "2099-01-02T03:04"]]);
    expect(res.statusCode, res.body).toBe(303);
    const id = jobOf(res.headers.location);
    const job = await viewer.get(`/configuration/jobs/${id}`);
    expect(job.body).toContain('config-state-pending">Pending');
    expect(job.body).toContain("<dt>Not before</dt><dd>2099-01-02 03:04 UTC</dd>");
    // Not waited for by refreshing the page every two seconds until 2099.
    expect(job.body).not.toContain("data-configuration-live");
    const server = await viewer.get("/configuration/servers/web1");
    expect(server.body).toContain("Remediation pending");
  });

  it("shows the form again with the API's refusal for bad arguments, values as text", async () => {
    const before = await jobCount();
    const res = await manager.post(
      "/configuration/servers/web1/remediate",
      [
        ["job", HOSTILE_JOB],
        ["start", "2024-02-30T10:00"],
      ],
      "/configuration/servers/web1",
    );
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("must be a date and time");
    expect(res.body).toContain('value="&lt;script&gt;alert(&quot;job&quot;)&lt;/script&gt;"');
    expect(res.body).toContain('value="2024-02-30T10:00"');
    expect(res.body).not.toContain(HOSTILE_JOB);
    const unsure = await manager.post("/configuration/servers/web1/remediate", [["simulate", "maybe"]]);
    expect(unsure.statusCode).toBe(400);
    expect(unsure.body).toContain("&#39;simulate&#39; must be true or false");
    const long = await manager.post("/configuration/servers/web1/remediate", [["job", "x".repeat(201)]]);
    expect(long.statusCode).toBe(400);
    const missing = await manager.post("/configuration/servers/nope/remediate", []);
    expect(missing.statusCode).toBe(404);
    const missingCheck = await manager.post("/configuration/servers/nope/check", []);
    expect(missingCheck.statusCode).toBe(404);
    expect(await jobCount()).toBe(before);
  });

  it("checks every server from the overview", async () => {
    const latest = () =>
      readAll<{ name: string; id: number }>(
        w.t.database,
        `SELECT s.name, max(c.id) AS id FROM servers s JOIN config_collections c ON c.server_id = s.id
          WHERE c.status != 'executing' GROUP BY s.name ORDER BY s.name`,
      );
    const before = new Map((await latest()).map((row) => [row.name, row.id]));
    const page = await manager.get("/configuration");
    expect(page.body).toContain("Check all servers now");
    const res = await manager.post("/configuration/check");
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/configuration?checked");
    // Both servers get a check that ends: nothing is left running for the next tests.
    await expect
      .poll(async () => (await latest()).filter((row) => row.id > (before.get(row.name) ?? 0)).map((row) => row.name), {
        timeout: 5_000,
      })
      .toEqual(["idle1", "web1"]);
  });
});

describe("checks and what went wrong", () => {
  it("lists a server's checks, the remediation's own marked, with counts", async () => {
    const page = await viewer.get("/configuration/servers/web1");
    expect(page.body).toMatch(/config-check-completed">Completed<\/span><\/td>\s*<td>1 drifted, 0 unknown of 2 items/);
    expect(page.body).toMatch(/<a href="\/configuration\/jobs\/\d+">by a remediation<\/a>/);
  });

  it("shows a failed check's error (here stored as a hostile message) as text, and marks a running check live", async () => {
    const server = await readOne<{ id: number }>(w.t.database, "SELECT id FROM servers WHERE name = 'idle1'");
    const insert = async (...values: unknown[]) => {
      const [row] = await execute<{ id: number }>(
        w.t.database,
        `INSERT INTO config_collections (server_id, status, started_at, ended_at, error_text)
         VALUES (?, ?, ?, ?, ?) RETURNING id`,
        values,
      );
      return row?.id;
    };
    const now = new Date().toISOString();
    // What an unreachable server's transport reports is text from elsewhere: stored as it came.
    await insert(server?.id, "error", now, now, `<script>alert("err")</script>`);
    const overview = await viewer.get("/configuration");
    expect(overview.body).toMatch(/idle1<\/a><\/td>\s*<td><span class="config-status config-status-error">Error</);
    expect(overview.body).toContain('<span class="error">&lt;script&gt;alert(&quot;err&quot;)&lt;/script&gt;</span>');
    expect(overview.body).not.toContain('<script>alert("err")');
    expect(overview.body).not.toContain("data-configuration-live");
    const page = await viewer.get("/configuration/servers/idle1");
    expect(page.body).toContain('config-check-error">Error');
    expect(page.body).not.toContain('<script>alert("err")');

    const running = await insert(server?.id, "executing", now, null, null);
    try {
      const live = await viewer.get("/configuration");
      expect(live.body).toMatch(/idle1<\/a><\/td>\s*<td><span class="config-status config-status-executing">Checking</);
      expect(live.body).toContain('<div data-configuration-live id="config-live">');
    } finally {
      await execute(w.t.database, "DELETE FROM config_collections WHERE id = ?", [running]);
    }
  });
});
