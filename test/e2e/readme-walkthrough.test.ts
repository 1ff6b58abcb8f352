import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROOT, type RunningServer, startServer } from "./process.js";

/**
 * The README's "first minutes" and "first hour" run as a reader runs them: every `sh` block of
 * those two sections, in order, in one bash, against a fresh server, in an empty directory. A
 * README command that stops working fails here, and so does one whose answer changes.
 */

const README = readFileSync(path.join(ROOT, "README.md"), "utf8");
const README_URL = "http://localhost:8624";
const TOOLS = ["bash", "curl", "jq", "zip"];

/** The `sh` blocks from "## The first minutes" to the end of "## The first hour". */
function walkthroughBlocks(): string[] {
  const start = README.indexOf("\n## The first minutes, with curl\n");
  const hour = README.indexOf("\n## The first hour\n");
  const end = README.indexOf("\n## ", hour + 1);
  expect(start, "README sections").toBeGreaterThan(0);
  expect(hour).toBeGreaterThan(start);
  expect(end).toBeGreaterThan(hour);
  return [...README.slice(start, end).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? "");
}

let work: string;
let server: RunningServer;

beforeAll(async () => {
  const missing = TOOLS.filter((tool) => spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0);
  // Not skipped: a README test that silently does not run is no test. CI installs them (.ci/run).
  if (missing.length > 0)
    throw new Error(`the README walkthrough needs ${missing.join(", ")}: apt-get install -y ${missing.join(" ")}`);
  work = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-readme-e2e-"));
  // No WHARF_ADMIN_API_KEY: the key is generated and saved in data/admin-api-key, as the README says.
  server = await startServer({ WHARF_DATA_DIR: path.join(work, "data") });
});
afterAll(async () => {
  await server?.stop();
  if (work) await fs.rm(work, { recursive: true, force: true });
});

function runBash(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("WHARF_")));
  const child = spawn("bash", ["-c", script], { cwd: work, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the README walkthrough did not finish in 90 s\n${stdout}\n${stderr}`));
    }, 90_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("README: the first minutes and the first hour", () => {
  it("run as written against a fresh server, and answer what the README says", async () => {
    const blocks = walkthroughBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    const script = [
      "set -euo pipefail",
      // The README's `wharf`, from this checkout's sources (compiled for this run: build.ts).
      `wharf() { node '${inject("wharfCli")}' "$@"; }`,
      ...blocks.map((block) => block.replaceAll(README_URL, server.url)),
    ].join("\n");
    const result = await runBash(script);
    expect(result, `${result.stdout}\n${result.stderr}`).toMatchObject({ code: 0 });
    const out = result.stdout;

    // The first minutes print JSON without a final newline.
    expect(out).toMatch(/Wrote acme\/tools\/my-app 1\.2\.0 to .*my-app-1\.2\.0\.upack \(1 files, /m);
    expect(out).toMatch(/^Pushed acme\/tools\/my-app 1\.2\.0 to /m);
    expect(out).toMatch(/^\{"group":"acme\/tools","name":"my-app","version":"1\.2\.1",.*"replaced":false\}$/m);
    expect(out).toMatch(/^Version 1\.2\.1 of package acme\/tools\/my-app already exists; .* \(409\)$/m);
    const badges = [...out.matchAll(/^aria-label="build: (\w+)"$/gm)].map((match) => match[1]);
    expect(badges).toEqual(["success", "unknown"]);
    expect(out).toMatch(/^401\n403\n403\n?$/m);

    // The refused second upload left the first one as it was.
    const key = (await fs.readFile(path.join(work, "data", "admin-api-key"), "utf8")).trim();
    const stored = await fetch(`${server.url}/upack/internal/versions?group=acme/tools&name=my-app&version=1.2.1`, {
      headers: { "X-ApiKey": key },
    });
    const local = createHash("sha1")
      .update(await fs.readFile(path.join(work, "my-app-1.2.1.upack")))
      .digest("hex");
    expect(((await stored.json()) as { sha1: string }).sha1).toBe(local);
  });
});
