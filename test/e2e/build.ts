import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { TestProject } from "vitest/node";

/**
 * Global setup of the e2e project: compiles src/ once per run for the `wharf` processes the
 * end-to-end tests start. Started through tsx, every child compiled the sources again (about 0.8 s
 * of CPU each, for some sixty processes a run); compiled here they start as `node dist/...` does.
 * esbuild strips the types as vitest and tsx do for everything else (`npm run typecheck` checks
 * them); each run gets its own directory, so runs side by side never read each other's half-written
 * files, and it is removed at the end.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** Inside the repository, so that the compiled files find node_modules/ and migrations/ as src/ does. */
const CACHE = path.join(ROOT, "node_modules/.cache/wharf-e2e");
/** A run that was killed leaves its directory behind: removed by a later run once surely finished. */
const LEFT_BEHIND_MS = 24 * 60 * 60 * 1000;

declare module "vitest" {
  export interface ProvidedContext {
    /** The compiled `wharf` command line entry (src/cli/main.ts). */
    wharfCli: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await fs.mkdir(CACHE, { recursive: true });
  await removeLeftBehind();
  const outDir = await fs.mkdtemp(path.join(CACHE, "run-"));
  await compileSources(outDir);
  project.provide("wharfCli", path.join(outDir, "src/cli/main.js"));
  return () => fs.rm(outDir, { recursive: true, force: true });
}

/** Compiles every file of src/ into `outDir` (as `outDir/src/...`), types stripped. */
export async function compileSources(outDir: string): Promise<void> {
  const sources = (await fs.readdir(path.join(ROOT, "src"), { recursive: true }))
    .filter((file) => file.endsWith(".ts"))
    .map((file) => path.join(ROOT, "src", file));
  await build({
    entryPoints: sources,
    outbase: ROOT,
    outdir: outDir,
    format: "esm",
    platform: "node",
    target: "es2022",
    tsconfig: path.join(ROOT, "tsconfig.build.json"),
    logLevel: "warning",
  });
}

async function removeLeftBehind(): Promise<void> {
  for (const entry of await fs.readdir(CACHE)) {
    const dir = path.join(CACHE, entry);
    const { mtimeMs } = await fs.stat(dir);
    if (Date.now() - mtimeMs > LEFT_BEHIND_MS) await fs.rm(dir, { recursive: true, force: true });
  }
}
