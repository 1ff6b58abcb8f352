// Compiles src/ into dist/ with tsc, and records a fingerprint of what it compiled.
//
//   node scripts/build.mjs              always build (npm run build)
//   node scripts/build.mjs --if-stale   build only when dist/ is missing or was built from other
//                                       sources (prestart)
//   ... --if-stale --after-install      the same, but a failed build does not fail the install
//                                       (npm's prepare: `npm start` tries again and shows why)
//
// Plain JavaScript, because it runs before anything is compiled. `npm start` must not pay for tsc on
// every start (tens of seconds on a small machine), yet must never run code older than the sources
// after a `git pull` or an edit: the fingerprint is a hash of every file under src/ (names and
// contents, so an added, removed or renamed file counts too) and of the tsconfig files, taken before
// tsc runs, so that an edit made during the build still counts as newer.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OUT_DIR = path.join(ROOT, "dist");
const FINGERPRINT_FILE = path.join(OUT_DIR, ".sources-sha256");
const INPUTS = ["src", "tsconfig.json", "tsconfig.build.json"];

/** Every file under `entry` (itself when it is a file), relative to ROOT, in a stable order. */
function filesUnder(entry) {
  const full = path.join(ROOT, entry);
  if (!fs.statSync(full).isDirectory()) return [entry];
  return fs
    .readdirSync(full, { recursive: true, withFileTypes: true })
    .filter((dirent) => dirent.isFile())
    .map((dirent) => path.relative(ROOT, path.join(dirent.parentPath, dirent.name)))
    .sort();
}

function sourcesFingerprint() {
  const hash = createHash("sha256");
  for (const file of INPUTS.flatMap(filesUnder)) {
    hash.update(`${file.split(path.sep).join("/")}\0`);
    hash.update(fs.readFileSync(path.join(ROOT, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

function builtFingerprint() {
  try {
    return fs.readFileSync(FINGERPRINT_FILE, "utf8").trim();
  } catch {
    return undefined;
  }
}

const ifStale = process.argv.includes("--if-stale");
const afterInstall = process.argv.includes("--after-install");

/** Ends the build as failed; after an install, says so without failing the install. */
function fail(reason, exitCode = 1) {
  process.stderr.write(`${reason}\n`);
  if (afterInstall) process.stderr.write("`npm start` will try to build again.\n");
  process.exit(afterInstall ? 0 : exitCode);
}

function tscEntry() {
  try {
    return createRequire(import.meta.url).resolve("typescript/bin/tsc");
  } catch {
    return fail("Cannot build Wharf: TypeScript is not installed. Run `npm ci` (with dev dependencies).");
  }
}

/** Puts `next` in place of dist/ with two renames, so that a process starting meanwhile finds a whole build. */
function replaceOutDir(next) {
  const old = `${OUT_DIR}.old-${process.pid}`;
  try {
    fs.renameSync(OUT_DIR, old);
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
  }
  try {
    fs.renameSync(next, OUT_DIR);
  } catch (error) {
    // Another build of the same tree finished first: its output stands.
    if (error.code !== "ENOTEMPTY" && error.code !== "EEXIST") throw error;
    fs.rmSync(next, { recursive: true, force: true });
  }
  fs.rmSync(old, { recursive: true, force: true });
}

const fingerprint = sourcesFingerprint();
if (ifStale && builtFingerprint() === fingerprint) process.exit(0);
if (ifStale) process.stderr.write("Building Wharf (dist/ is missing or older than the sources)...\n");

// Into a new directory, swapped in whole: files of sources removed or moved since the last build do
// not linger, and a server or test starting from dist/ during the build never sees half of one.
const next = `${OUT_DIR}.next-${process.pid}`;
fs.rmSync(next, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [tscEntry(), "-p", "tsconfig.build.json", "--outDir", next], {
  cwd: ROOT,
  stdio: "inherit",
});
if (tsc.status !== 0) {
  fs.rmSync(next, { recursive: true, force: true });
  fail("The build failed (see above).", tsc.status ?? 1);
}
fs.writeFileSync(path.join(next, path.basename(FINGERPRINT_FILE)), `${fingerprint}\n`);
replaceOutDir(next);
