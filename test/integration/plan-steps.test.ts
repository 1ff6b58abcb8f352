import { existsSync } from "node:fs";
import { lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/domain/clock.js";
import { DomainError, notFound } from "../../src/domain/errors.js";
import {
  createPlanExecutor,
  expandVariables,
  type FetchPackage,
  parsePlan,
  parsePlanText,
  type PlanExecutorDeps,
  type PlanResult,
} from "../../src/jobs/plan-steps.js";
import { createJobRunner } from "../../src/jobs/runner.js";
import { createGuardedFetch } from "../../src/net/fetch-guard.js";
import { openDatabase } from "../../src/storage/database.js";
import { buildZip, type ZipEntries } from "../helpers/upack-fixtures.js";

let server: http.Server;
let base: string;
const requests: string[] = [];

beforeAll(async () => {
  server = http.createServer((request, response) => {
    requests.push(request.url ?? "");
    response.statusCode = request.url?.startsWith("/broken") ? 500 : 200;
    response.end("hello");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

let dir: string;
let root: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "wharf-plan-"));
  root = path.join(dir, "deploy-root");
  await mkdir(root);
  requests.length = 0;
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const guardedFetch = createGuardedFetch({ allowPrivate: true, timeoutMs: 5_000, maxBytes: 1_000_000, maxRedirects: 2 });
const packages = new Map<string, Buffer>();
const fetchPackage: FetchPackage = async (feed, group, name, version) => {
  const bytes = packages.get(`${feed}:${group}/${name}@${version}`);
  if (bytes === undefined) throw notFound("PACKAGE_NOT_FOUND", `${name} ${version} is not in ${feed}.`);
  return Readable.from([bytes]);
};

async function run(
  steps: unknown[],
  variables: Record<string, string> = {},
  options: { signal?: AbortSignal; deps?: Partial<PlanExecutorDeps> } = {},
): Promise<PlanResult & { lines: string[] }> {
  const executor = createPlanExecutor({
    fetch: guardedFetch,
    fetchPackage,
    deployRoots: [root],
    tempDir: dir,
    ...options.deps,
  });
  const lines: string[] = [];
  const result = await executor.run(parsePlan({ steps }), {
    variables,
    signal: options.signal ?? new AbortController().signal,
    log: (level, message) => lines.push(`${level}: ${message}`),
  });
  return { ...result, lines: lines.filter((line) => !line.startsWith("debug: Step")) };
}

describe("plan definitions", () => {
  it.each([
    [{ steps: [{ type: "explode" }] }, /step 1 type: unknown step type/],
    [{ steps: [{ type: "sleep", seconds: 601 }] }, /step 1 seconds: Too big/],
    [{ steps: [{ type: "log", message: "ok" }, { type: "warn" }] }, /step 2 message: Invalid input/],
    [{ steps: [{ type: "log", message: "x", colour: "red" }] }, /step 1: Unrecognized key: "colour"/],
    [{ steps: [{ type: "set-variable", name: "9lives", value: "" }] }, /step 1 name: must be a letter/],
    [{}, /steps: Invalid input: expected array/],
    [[], /the plan: Invalid input: expected object/],
  ])("refuses %j", (plan, message) => {
    const error = (() => {
      try {
        parsePlan(plan);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ kind: "invalid", code: "PLAN_INVALID" });
    expect((error as Error).message).toMatch(/^The deployment plan is invalid: /);
    expect((error as Error).message).toMatch(message);
  });

  it("reads JSON text, with defaults filled in", () => {
    expect(parsePlanText('{"steps":[{"type":"log","message":"hi"},{"type":"http","url":"http://x"}]}')).toEqual({
      steps: [
        { type: "log", message: "hi", level: "info" },
        { type: "http", url: "http://x", onErrorStatus: "fail" },
      ],
    });
    expect(() => parsePlanText("{steps")).toThrow(expect.objectContaining({ code: "PLAN_NOT_JSON" }));
  });

  it("expands $Name and ${Name} case-insensitively, $$ to $, and refuses unknown names", () => {
    const vars = new Map([
      ["releasenumber", "1.2"],
      ["app", "web"],
    ]);
    expect(expandVariables("v$ReleaseNumber ${APP}s cost $$5, $5", vars)).toBe("v1.2 webs cost $5, $5");
    expect(() => expandVariables("/srv/$Aplication", vars)).toThrow(/The variable \$Aplication is not defined/);
  });
});

describe("running a plan", () => {
  it("logs, sets variables for later steps, and ends warned after a warn step", async () => {
    const result = await run(
      [
        { type: "log", message: "Deploying $Application $ReleaseNumber" },
        { type: "set-variable", name: "Target", value: "/srv/$Application" },
        { type: "warn", message: "disk at 91% under ${Target}" },
        { type: "log", message: "still running" },
      ],
      { Application: "web", ReleaseNumber: "1.2.3" },
    );
    expect(result.outcome).toBe("warned");
    expect(result.lines).toEqual([
      "info: Deploying web 1.2.3",
      "debug: $Target is set.",
      "warn: disk at 91% under /srv/web",
      "info: still running",
    ]);
    expect(result.variables).toMatchObject({ application: "web", target: "/srv/web" });
  });

  it("succeeds when nothing warned, and stops at the first fail step", async () => {
    expect((await run([{ type: "log", message: "a" }])).outcome).toBe("succeeded");
    const failed = await run(
      [
        { type: "log", message: "a" },
        { type: "fail", message: "no deploys on $Day" },
        { type: "log", message: "never" },
      ],
      { Day: "Friday" },
    );
    expect(failed.outcome).toBe("failed");
    expect(failed.lines).toEqual(["info: a", "error: no deploys on Friday"]);
    expect((await run([{ type: "fail" }])).lines).toEqual(["error: Step 1 of 1 (fail) failed the plan."]);
  });

  it("fails a step that names an unknown variable", async () => {
    const result = await run([
      { type: "log", message: "$Nope" },
      { type: "log", message: "never" },
    ]);
    expect(result.outcome).toBe("failed");
    expect(result.lines).toEqual(["error: Step 1 of 2 (log) failed: The variable $Nope is not defined."]);
  });

  it("sleeps, checks a delay from a variable, and stops sleeping when canceled", async () => {
    const started = Date.now();
    expect((await run([{ type: "sleep", seconds: "$Delay" }], { Delay: "0.05" })).outcome).toBe("succeeded");
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    const bad = await run([{ type: "sleep", seconds: "$Delay" }], { Delay: "9999" });
    expect(bad.lines.at(-1)).toMatch(/seconds must be a number from 0 to 600/);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const before = Date.now();
    const canceled = await run([{ type: "sleep", seconds: 600 }], {}, { signal: controller.signal });
    expect(canceled.outcome).toBe("failed");
    expect(canceled.lines.at(-1)).toBe("error: Step 1 of 1 (sleep) failed: the plan was canceled");
    expect(Date.now() - before).toBeLessThan(2_000);
  });

  it("calls a URL through the fetch guard and logs its status, with secrets redacted", async () => {
    const ok = await run([{ type: "http", url: `${base}/hook/$App?key=s3cret&x=1` }], { App: "web" });
    expect(ok.outcome).toBe("succeeded");
    expect(ok.lines).toEqual([`info: GET ${base}/hook/web?key=***&x=1 answered 200.`]);
    expect(requests).toEqual(["/hook/web?key=s3cret&x=1"]);

    const broken = await run([
      { type: "http", url: `${base}/broken` },
      { type: "log", message: "never" },
    ]);
    expect(broken.outcome).toBe("failed");
    expect(broken.lines).toEqual([`error: Step 1 of 2 (http) failed: GET ${base}/broken answered 500.`]);
    expect((await run([{ type: "http", url: `${base}/broken`, onErrorStatus: "warn" }])).outcome).toBe("warned");
    expect((await run([{ type: "http", url: `${base}/broken`, onErrorStatus: "ignore" }])).outcome).toBe("succeeded");
  });

  it("refuses the metadata address even with private addresses allowed", async () => {
    const result = await run([{ type: "http", url: "http://169.254.169.254/latest/meta-data/" }]);
    expect(result.outcome).toBe("failed");
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toMatch(/^error: Step 1 of 1 \(http\) failed: .*169\.254\.169\.254/);
  });
});

/** yazl refuses unsafe names, so a hostile archive is built with a stand-in, then renamed in place. */
async function zipWithRenamedEntry(entries: ZipEntries, standIn: string, name: string): Promise<Buffer> {
  expect(Buffer.byteLength(standIn)).toBe(Buffer.byteLength(name));
  const bytes = await buildZip(entries);
  const from = Buffer.from(standIn);
  let at = bytes.indexOf(from);
  expect(at).toBeGreaterThanOrEqual(0);
  for (; at >= 0; at = bytes.indexOf(from, at + 1)) bytes.write(name, at);
  return bytes;
}

const upackJson = JSON.stringify({ name: "app", version: "1.2.3" });

describe("deploy-package", () => {
  beforeEach(async () => {
    packages.clear();
    packages.set(
      "main:acme/app@1.2.3",
      await buildZip({
        "upack.json": upackJson,
        "package/": null,
        "package/bin/run.sh": "#!/bin/sh\necho hi\n",
        "package/readme.txt": "read me",
        "package/empty/": null,
        "outside-package.txt": "not deployed",
      }),
    );
  });

  it("extracts the package/ contents into a target inside an allowed root", async () => {
    const result = await run(
      [
        {
          type: "deploy-package",
          feed: "main",
          group: "acme",
          name: "$App",
          version: "$Version",
          target: `${root}/$App/current`,
        },
      ],
      { App: "app", Version: "1.2.3" },
    );
    const target = path.join(root, "app", "current");
    expect(result.lines).toEqual([`info: Deployed acme/app 1.2.3 from feed main to ${target} (2 files).`]);
    expect(result.outcome).toBe("succeeded");
    expect(await readFile(path.join(target, "bin", "run.sh"), "utf8")).toBe("#!/bin/sh\necho hi\n");
    expect(await readFile(path.join(target, "readme.txt"), "utf8")).toBe("read me");
    expect((await stat(path.join(target, "empty"))).isDirectory()).toBe(true);
    expect((await readdir(target)).sort()).toEqual(["bin", "empty", "readme.txt"]);
    // The spool is gone: nothing but the root and nothing left in the temp dir.
    expect((await readdir(dir)).sort()).toEqual(["deploy-root"]);
  });

  it("replaces a symbolic link at a destination instead of writing through it", async () => {
    const target = path.join(root, "site");
    const victim = path.join(dir, "victim.txt");
    await writeFile(victim, "untouched");
    await mkdir(target);
    await symlink(victim, path.join(target, "readme.txt"));
    const result = await run([
      { type: "deploy-package", feed: "main", group: "acme", name: "app", version: "1.2.3", target },
    ]);
    expect(result.outcome).toBe("succeeded");
    expect(await readFile(victim, "utf8")).toBe("untouched");
    expect((await lstat(path.join(target, "readme.txt"))).isSymbolicLink()).toBe(false);
  });

  it.each([
    ["a relative target", "relative/dir", /is not an absolute path/],
    ["a target outside every root", "/tmp/elsewhere-$App", /is not inside an allowed deployment root/],
    ["a target climbing out of the root", "$Root/../escape", /is not inside an allowed deployment root/],
  ])("refuses %s", async (_what, target, message) => {
    const result = await run(
      [{ type: "deploy-package", feed: "main", group: "acme", name: "app", version: "1.2.3", target }],
      {
        App: "x",
        Root: root,
      },
    );
    expect(result.outcome).toBe("failed");
    expect(result.lines.at(-1)).toMatch(message);
    expect(existsSync(path.join(dir, "escape"))).toBe(false);
  });

  it("refuses a target reached through a symbolic link that leaves the root", async () => {
    const outside = path.join(dir, "outside");
    await mkdir(outside);
    await symlink(outside, path.join(root, "link"));
    const result = await run([
      {
        type: "deploy-package",
        feed: "main",
        group: "acme",
        name: "app",
        version: "1.2.3",
        target: `${root}/link/app`,
      },
    ]);
    expect(result.outcome).toBe("failed");
    expect(result.lines.at(-1)).toMatch(/resolves outside the allowed deployment directory/);
    expect(await readdir(outside)).toEqual([]);
  });

  it("refuses an archive with a ../ entry (zip-slip) and writes nothing outside", async () => {
    const evil = "package/../../evil.sh";
    packages.set(
      "main:acme/app@6.6.6",
      await zipWithRenamedEntry(
        { "upack.json": upackJson, "package/ok.txt": "ok", ["package/" + "Z".repeat(evil.length - 8)]: "pwned" },
        "package/" + "Z".repeat(evil.length - 8),
        evil,
      ),
    );
    const target = path.join(root, "app");
    const result = await run([
      { type: "deploy-package", feed: "main", group: "acme", name: "app", version: "6.6.6", target },
    ]);
    expect(result.outcome).toBe("failed");
    expect(result.lines.at(-1)).toMatch(/"package\/\.\.\/\.\.\/evil\.sh" is refused: it contains a '\.\.' segment/);
    expect(existsSync(path.join(dir, "evil.sh"))).toBe(false);
    expect(existsSync(path.join(root, "evil.sh"))).toBe(false);
    expect(await readdir(target)).toEqual([]); // refused before anything was extracted
  });

  it("fails with the feed's message when the package is not there, and without roots at all", async () => {
    const missing = await run([
      { type: "deploy-package", feed: "main", name: "app", version: "9.9.9", target: `${root}/x` },
    ]);
    expect(missing.outcome).toBe("failed");
    expect(missing.lines.at(-1)).toMatch(/app 9\.9\.9 is not in main\./);
    const noRoots = await run(
      [{ type: "deploy-package", feed: "main", group: "acme", name: "app", version: "1.2.3", target: `${root}/x` }],
      {},
      { deps: { deployRoots: [] } },
    );
    expect(noRoots.lines.at(-1)).toMatch(/no deployment root is configured \(WHARF_DEPLOY_ROOT\)/);
  });
});

describe("a plan as a job", () => {
  it("runs through the job runner with the job's log and signal", async () => {
    const db = openDatabase(path.join(dir, "wharf.sqlite"));
    const executor = createPlanExecutor({ fetch: guardedFetch, fetchPackage, deployRoots: [root], tempDir: dir });
    const jobs = createJobRunner({
      db,
      clock: systemClock,
      concurrency: 1,
      log: { warn: () => undefined, error: () => undefined },
      handlers: {
        deployment: async (job, context) => {
          const { plan, variables } = job.payload as { plan: unknown; variables: Record<string, string> };
          return (await executor.run(parsePlan(plan), { ...context, variables })).outcome;
        },
      },
    });
    try {
      await jobs.start();
      const id = await jobs.enqueue("deployment", {
        plan: { steps: [{ type: "warn", message: "build $BuildNumber is a hotfix" }] },
        variables: { BuildNumber: "42" },
      });
      for (let i = 0; i < 200 && (await jobs.findJob(id))?.endedAt === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect((await jobs.findJob(id))?.status).toBe("warned");
      const log = (await jobs.readLog(id)).map((line) => `${line.level}: ${line.message}`);
      expect(log).toEqual(["debug: Step 1 of 1 (warn)", "warn: build 42 is a hotfix", "warn: The job ended: warned."]);
    } finally {
      await jobs.stop();
      db.close();
    }
  });
});
