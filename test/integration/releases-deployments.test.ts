import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { INTERRUPTED_MESSAGE } from "../../src/jobs/runner.js";
import { LEASE_LAPSED_MESSAGE } from "../../src/jobs/runner-postgres.js";
import { openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import type { MetadataDb } from "../../src/storage/metadata-db.js";
import { buildTestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { postgresTestEnv, testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * Deployments really run (issue 6 section 1): the job runner dispatches pending deployments, runs
 * their plan steps, keeps the log (execution view) and applies the state rules; deployment plans
 * API; deploy-package into WHARF_DEPLOY_ROOT; the restart rule.
 */
type Json = Record<string, unknown>;

interface Wharf {
  readonly app: FastifyInstance;
  readonly database: MetadataDb;
  readonly key: string;
  json(method: InjectOptions["method"], url: string, body?: unknown, key?: string): Promise<LightMyRequestResponse>;
  ok<T = Json>(res: LightMyRequestResponse): T;
  close(): Promise<void>;
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** A test app (on SQLite, or a cluster node on PostgreSQL: buildTestApp). */
async function start(env: Record<string, string> = {}): Promise<Wharf> {
  const t = await buildTestApp({ env });
  return wharfOf(t.app, t.database, t.adminKey, () => t.close());
}

/**
 * An app on SQLite on `dataDir`, reused across a restart, with the same admin key each time;
 * closing it keeps the data directory.
 */
async function startOnDataDir(dataDir: string, env: Record<string, string> = {}): Promise<Wharf> {
  const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", ...env });
  const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
  const key = `test-admin-${path.basename(dataDir)}-key`;
  bootstrapAdminKey(db, dataDir, key, systemClock);
  const app = await buildApp(config, { db, blobs: createFileBlobStore(dataDir), logger: false });
  await app.ready();
  return wharfOf(app, db, key, async () => {
    await app.close();
    db.close();
  });
}

/** The shortest job lease (WHARF_JOB_LEASE_SECONDS), so that a stopped node's deployment lapses soon. */
const SHORT_LEASE_SECONDS = 3;

interface Restartable {
  /** Starts the Wharf (again, after it was closed). */
  start(): Promise<Wharf>;
  /** What the restart rule writes in the log of a deployment that was executing when it stopped. */
  readonly interruptedMessage: string;
  /** How long after the restart that deployment ends at most. */
  readonly endsWithinMs: number;
}

/**
 * One Wharf, started again after it stopped: the one process on its data directory (SQLite), whose
 * restart rule ends what was executing at start; or, in a cluster, another node on the same
 * database, where a deployment ends once its lease lapsed (docs/cluster-mode.md, Jobs).
 */
async function restartable(env: Record<string, string>): Promise<Restartable> {
  if (!testsRunOnPostgres()) {
    const dataDir = await tempDir("wharf-deploy-");
    return { start: () => startOnDataDir(dataDir, env), interruptedMessage: INTERRUPTED_MESSAGE, endsWithinMs: 5_000 };
  }
  const cluster = { ...(await postgresTestEnv()), ...env, WHARF_JOB_LEASE_SECONDS: String(SHORT_LEASE_SECONDS) };
  return {
    start: () => start(cluster),
    interruptedMessage: LEASE_LAPSED_MESSAGE,
    // The lease, then the rule's next pass (every 5 s), with room for a loaded machine.
    endsWithinMs: (SHORT_LEASE_SECONDS + 5 + 10) * 1000,
  };
}

function wharfOf(app: FastifyInstance, database: MetadataDb, key: string, close: () => Promise<void>): Wharf {
  const json: Wharf["json"] = (method, url, body, useKey = key) =>
    app.inject({
      method,
      url,
      headers: { "x-apikey": useKey, ...(body !== undefined && { "content-type": "application/json" }) },
      ...(body !== undefined && { payload: JSON.stringify(body) }),
    });
  return {
    app,
    database,
    key,
    json,
    ok<T>(res: LightMyRequestResponse): T {
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as T;
    },
    close,
  };
}

const unique = () => randomBytes(4).toString("hex");

/** An application with a release on a new pipeline of the given stages; returns the application id. */
async function application(w: Wharf, name: string, stages: readonly Json[]): Promise<number> {
  w.ok(await w.json("POST", "/api/pipelines/create", { name: `${name}-pipeline`, stages }));
  const { id } = w.ok<{ id: number }>(await w.json("POST", "/api/applications/create", { name }));
  w.ok(
    await w.json("POST", "/api/releases/create", {
      applicationName: name,
      releaseNumber: "1.0",
      pipelineName: `${name}-pipeline`,
    }),
  );
  return id;
}

async function createBuild(w: Wharf, app: string, variables: Json = {}): Promise<Json> {
  return w.ok(
    await w.json("POST", "/api/releases/builds/create", { applicationName: app, releaseNumber: "1.0", ...variables }),
  );
}

/** Polls the deployments query until the deployment has ended (bounded). */
async function ended(w: Wharf, deploymentId: unknown, timeoutMs = 5_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [deployment] = w.ok<Json[]>(
      await w.json("GET", `/api/releases/builds/deployments?deploymentId=${deploymentId}`),
    );
    if (deployment !== undefined && deployment.status !== "pending" && deployment.status !== "executing") {
      return deployment;
    }
    if (Date.now() > deadline) throw new Error(`deployment ${deploymentId} still ${String(deployment?.status)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function firstDeployment(w: Wharf, build: Json): Promise<Json> {
  const [deployment] = w.ok<Json[]>(await w.json("GET", `/api/releases/builds/deployments?buildId=${build.id}`));
  expect(deployment).toBeDefined();
  return deployment as Json;
}

async function executionLog(w: Wharf, appId: number, deploymentId: unknown): Promise<string> {
  return w.ok<{ log: string }>(await w.json("GET", `/applications/${appId}/executions/${deploymentId}`)).log;
}

describe("deployments run by themselves", () => {
  let w: Wharf;
  beforeAll(async () => {
    w = await start();
  });
  afterAll(() => w.close());

  it("a build created through the API succeeds, with variables expanded and the log in the execution view", async () => {
    const name = `App-${unique()}`;
    const appId = await application(w, name, [
      {
        name: "Integration",
        environmentName: "Integration",
        plan: [
          { type: "log", message: "Deploying $ApplicationName $ReleaseNumber build $BuildNumber" },
          { type: "set-variable", name: "Target", value: "$PipelineStageName/$EnvironmentName" },
          { type: "sleep", seconds: 0.05 },
          { type: "log", message: "to $Target, $Greeting" },
        ],
      },
      { name: "Production", plan: [{ type: "log", message: "live" }] },
    ]);
    const build = await createBuild(w, name, { $Greeting: "hello" });
    const deployment = await ended(w, (await firstDeployment(w, build)).id);
    expect(deployment).toMatchObject({ status: "succeeded", pipelineStageName: "Integration" });
    expect(typeof deployment.started).toBe("string");
    expect(typeof deployment.ended).toBe("string");
    const log = await executionLog(w, appId, deployment.id);
    expect(log).toContain(`INFO  Deploying ${name} 1.0 build ${build.number}`);
    expect(log).toContain("to Integration/Integration, hello");
    expect(log).toMatch(/INFO {2}The job ended: succeeded\.\n$/);
    // Not the final stage: the build is still active.
    const [stillActive] = w.ok<Json[]>(await w.json("GET", `/api/releases/builds?buildId=${build.id}`));
    expect(stillActive?.status).toBe("active");
  });

  it("a fail step ends failed, a warn step warned; success in the final stage deploys build and release", async () => {
    const name = `Flow-${unique()}`;
    w.ok(
      await w.json("POST", "/api/plans/create", { name: `${name}-warns`, steps: [{ type: "warn", message: "hm" }] }),
    );
    const appId = await application(w, name, [
      { name: "One", planName: `${name}-warns` },
      { name: "Two", plan: [{ type: "fail", message: "nope on $PipelineStageName" }] },
      { name: "Three", plan: [{ type: "log", message: "done" }] },
    ]);
    const build = await createBuild(w, name);
    const one = await ended(w, (await firstDeployment(w, build)).id);
    expect(one.status).toBe("warned");
    expect(await executionLog(w, appId, one.id)).toContain("WARN  hm");

    const [two] = w.ok<Json[]>(await w.json("POST", "/api/releases/builds/deploy", { buildId: build.id }));
    const failed = await ended(w, two?.id);
    expect(failed).toMatchObject({ status: "failed", pipelineStageName: "Two" });
    expect(await executionLog(w, appId, failed.id)).toContain("ERROR nope on Two");

    const [three] = w.ok<Json[]>(
      await w.json("POST", "/api/releases/builds/deploy", { buildId: build.id, toStage: "Three", force: true }),
    );
    expect((await ended(w, three?.id)).status).toBe("succeeded");
    const [deployed] = w.ok<Json[]>(await w.json("GET", `/api/releases/builds?buildId=${build.id}`));
    expect(deployed?.status).toBe("deployed");
    const [release] = w.ok<Json[]>(await w.json("GET", `/api/releases?applicationName=${name}&releaseNumber=1.0`));
    expect(release?.status).toBe("deployed");
  });

  it("a deploy-package step without WHARF_DEPLOY_ROOT fails with a message saying so", async () => {
    const name = `NoRoot-${unique()}`;
    const appId = await application(w, name, [
      {
        name: "Only",
        plan: [{ type: "deploy-package", feed: "main", name: "x", version: "1.0.0", target: "/tmp/x" }],
      },
    ]);
    const deployment = await ended(w, (await firstDeployment(w, await createBuild(w, name))).id);
    expect(deployment.status).toBe("failed");
    expect(await executionLog(w, appId, deployment.id)).toContain(
      "no deployment root is configured (WHARF_DEPLOY_ROOT)",
    );
  });

  it("deployment plans API: create, get, list, update, validation, access, 409 while a pipeline uses one", async () => {
    const plan = `Plan-${unique()}`;
    const steps = [{ type: "log", message: "one" }];
    const created = w.ok(await w.json("POST", "/api/plans/create", { name: plan, steps }));
    expect(created).toMatchObject({ name: plan, steps: [{ type: "log", message: "one", level: "info" }] });
    expect((await w.json("POST", "/api/plans/create", { name: plan.toLowerCase(), steps })).statusCode).toBe(409);
    const bad = await w.json("POST", "/api/plans/create", { name: "Bad", steps: [{ type: "sleep", seconds: -1 }] });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toMatch(/^The deployment plan is invalid: step 1 seconds/);
    const unknown = await w.json("POST", "/api/plans/create", { name: "Bad", steps: [{ type: "call-url" }] });
    expect(unknown.statusCode).toBe(400);

    expect(w.ok(await w.json("GET", `/api/plans/get/${plan.toUpperCase()}`))).toMatchObject({ name: plan });
    expect((await w.json("GET", "/api/plans/get/none-such")).statusCode).toBe(404);
    const updated = w.ok(
      await w.json("POST", `/api/plans/update/${plan}`, { steps: [{ type: "warn", message: "two" }] }),
    );
    expect(updated).toMatchObject({ name: plan, steps: [{ type: "warn", message: "two" }] });
    expect((await w.json("POST", `/api/plans/update/${plan}`, { name: "Other", steps })).statusCode).toBe(400);
    expect((await w.json("POST", "/api/plans/update/none-such", { steps })).statusCode).toBe(404);
    const listed = w.ok<Json[]>(await w.json("POST", "/api/plans/list"));
    expect(listed.map((p) => p.name)).toContain(plan);

    // Inline stage steps are checked by the same schema, the message naming the stage.
    const inline = await w.json("POST", "/api/pipelines/create", {
      name: `Inline-${plan}`,
      stages: [{ name: "S", plan: [{ type: "http" }] }],
    });
    expect(inline.statusCode).toBe(400);
    expect(inline.body).toMatch(/^Stage 'S': The deployment plan is invalid: step 1 url/);

    const pipeline = `Uses-${plan}`;
    w.ok(await w.json("POST", "/api/pipelines/create", { name: pipeline, stages: [{ name: "S", planName: plan }] }));
    const inUse = await w.json("DELETE", `/api/plans/delete/${plan}`);
    expect(inUse.statusCode).toBe(409);
    expect(inUse.body).toContain(pipeline);

    const releasesKey = await createSystemKey(w.database, ["releases"]);
    expect((await w.json("POST", "/api/plans/create", { name: "K", steps }, releasesKey)).statusCode).toBe(403);
    expect((await w.json("DELETE", `/api/plans/delete/${plan}`, undefined, "wrong-key")).statusCode).toBe(403);

    expect((await w.json("POST", `/api/pipelines/delete/${pipeline}`)).statusCode).toBe(200);
    const deleted = await w.json("POST", `/api/plans/delete/${plan}`);
    expect(deleted.statusCode).toBe(200);
    expect((await w.json("DELETE", `/api/plans/delete/${plan}`)).statusCode).toBe(404);
    expect((await w.json("GET", `/api/plans/get/${plan}`)).statusCode).toBe(404);

    const doc = w.ok<{ paths: Record<string, Record<string, { summary?: string }>> }>(
      await w.json("GET", "/openapi.json"),
    );
    expect(doc.paths["/api/plans/create"]?.post?.summary).toBe("Create a deployment plan");
    expect(Object.keys(doc.paths["/api/plans/delete/{name}"] ?? {}).sort()).toEqual(["delete", "post"]);
  });
});

describe("deploy-package and http steps", () => {
  let w: Wharf;
  let root: string;
  let server: http.Server;
  let base: string;
  const hits: string[] = [];
  beforeAll(async () => {
    server = http.createServer((request, response) => {
      hits.push(request.url ?? "");
      response.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    root = await tempDir("wharf-deploy-root-");
    w = await start({ WHARF_DEPLOY_ROOT: root, WHARF_FETCH_ALLOW_PRIVATE: "true" });
  });
  afterAll(async () => {
    await w.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("extracts a package uploaded to a local universal feed under the root, and calls a URL", async () => {
    const feed = await w.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: { "x-apikey": w.key },
      payload: { name: "main", feedType: "universal" },
    });
    expect(feed.statusCode, feed.body).toBe(201);
    const bytes = await buildUpack({
      group: "acme",
      name: "site",
      version: "1.2.0",
      files: { "index.html": "<h1>hi</h1>", "css/app.css": "body{}" },
    });
    const upload = await w.app.inject({
      method: "PUT",
      url: "/upack/main/upload",
      headers: { "x-apikey": w.key, "content-type": "application/zip" },
      payload: bytes,
    });
    expect(upload.statusCode, upload.body).toBe(201);

    const name = `Site-${unique()}`;
    const appId = await application(w, name, [
      {
        name: "Web",
        plan: [
          {
            type: "deploy-package",
            feed: "main",
            group: "acme",
            name: "site",
            version: "$SiteVersion",
            target: `${root}/$ApplicationName/$BuildNumber`,
          },
          {
            type: "deploy-package",
            feed: "main",
            group: "acme",
            name: "site",
            version: "latest",
            target: `${root}/latest`,
          },
          { type: "http", url: `${base}/deployed?app=$ApplicationName&key=secret` },
        ],
      },
    ]);
    const build = await createBuild(w, name, { $SiteVersion: "1.2.0" });
    const deployment = await ended(w, (await firstDeployment(w, build)).id);
    const log = await executionLog(w, appId, deployment.id);
    expect(deployment.status, log).toBe("succeeded");
    const target = path.join(root, name, String(build.number));
    expect(await fs.readFile(path.join(target, "index.html"), "utf8")).toBe("<h1>hi</h1>");
    expect(await fs.readFile(path.join(target, "css", "app.css"), "utf8")).toBe("body{}");
    expect(log).toContain(`Deployed acme/site 1.2.0 from feed main to ${await fs.realpath(target)} (2 files).`);
    expect(await fs.readFile(path.join(root, "latest", "index.html"), "utf8")).toBe("<h1>hi</h1>");
    expect(hits).toEqual([`/deployed?app=${name}&key=secret`]);
    expect(log).toContain("key=***");
    expect(log).not.toContain("secret");
  });

  it("fails with the feed's message for a version the feed does not have", async () => {
    const name = `Missing-${unique()}`;
    const appId = await application(w, name, [
      {
        name: "Web",
        plan: [{ type: "deploy-package", feed: "main", group: "acme", name: "site", version: "9.9.9", target: root }],
      },
    ]);
    const deployment = await ended(w, (await firstDeployment(w, await createBuild(w, name))).id);
    expect(deployment.status).toBe("failed");
    expect(await executionLog(w, appId, deployment.id)).toMatch(/9\.9\.9/);
  });
});

describe("restart rule", () => {
  let w: Wharf | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  it("a deployment executing when the process stopped ends failed; a pending one still runs", async () => {
    // One at a time, and close gives up on a running deployment at once.
    const wharf = await restartable({ WHARF_DEPLOY_CONCURRENCY: "1", WHARF_DEPLOY_STOP_SECONDS: "0.05" });
    w = await wharf.start();
    const slow = await application(w, "Slow", [{ name: "S", plan: [{ type: "sleep", seconds: 30 }] }]);
    const quick = await application(w, "Quick", [{ name: "Q", plan: [{ type: "log", message: "quick one" }] }]);
    const slowDeployment = await firstDeployment(w, await createBuild(w, "Slow"));
    // The execution view shows the log of a running deployment as it grows.
    const deadline = Date.now() + 5_000;
    while (!(await executionLog(w, slow, slowDeployment.id)).includes("Sleeping 30 s.")) {
      if (Date.now() > deadline) throw new Error("the slow deployment never reached its sleep step");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const [executing] = w.ok<Json[]>(
      await w.json("GET", `/api/releases/builds/deployments?deploymentId=${slowDeployment.id}`),
    );
    expect(executing?.status).toBe("executing");
    const quickDeployment = await firstDeployment(w, await createBuild(w, "Quick"));
    expect(quickDeployment.status).toBe("pending");
    await w.close();

    w = await wharf.start();
    const failed = await ended(w, slowDeployment.id, wharf.endsWithinMs);
    expect(failed.status).toBe("failed");
    const log = await executionLog(w, slow, slowDeployment.id);
    expect(log).toContain("Sleeping 30 s.");
    expect(log).toContain(wharf.interruptedMessage);
    expect((await ended(w, quickDeployment.id)).status).toBe("succeeded");
    expect(await executionLog(w, quick, quickDeployment.id)).toContain("quick one");
  }, 60_000);
});
