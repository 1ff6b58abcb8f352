import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { literalPathProblem } from "../../domain/relative-path.js";
import type { DesiredItem, Difference, InstalledPackage, ResolvedPackage } from "../model.js";
import { type Applied, type ItemHandler, type ItemRun, ItemUnknownError } from "./handler.js";
import type { PackageProperties } from "./schema.js";

/**
 * `package` items: a universal package from a Wharf feed is installed in a target directory,
 * compared the way Otter's Ensure-Package does: the version recorded when it was installed, and
 * every file of the package present with its size and SHA-256. Installing spools the .upack to a
 * temporary file, opens it with the same checks uploads get (zip-slip names, links, bombs, local
 * headers against the central directory), writes each file under package/ through the executor
 * (so the root's confinement applies to every entry), then records the installation.
 *
 * The record is the target machine's own registry, `/.wharf/packages.json` under the root, kept
 * like upack's installed-packages registry: `{ packages: [{ group, name, version, path, feed,
 * installationDate, installedUsing }] }`.
 */
export const PACKAGE_REGISTRY_PATH = "/.wharf/packages.json";
const MAX_REGISTRY_BYTES = 16 * 1024 * 1024;
/** File differences listed one by one; beyond, one line counts the rest. */
const LISTED_FILE_DIFFERENCES = 10;
const PACKAGE_PREFIX = "package/";

interface DesiredPackage {
  readonly properties: PackageProperties;
  readonly resolved: ResolvedPackage;
}
interface ActualPackage {
  readonly recordedVersion: string | undefined;
  readonly files: readonly { readonly path: string; readonly desired: string; readonly actual: string | null }[];
}

export interface RegistryEntry {
  readonly group: string;
  readonly name: string;
  readonly version: string;
  readonly path: string;
  readonly feed: string;
  readonly installationDate: string;
  readonly installedUsing: string;
}

export const packageHandler: ItemHandler<DesiredPackage, ActualPackage> = {
  async prepare(item: DesiredItem, run: ItemRun): Promise<DesiredPackage> {
    const properties = item.properties as unknown as PackageProperties;
    const { feed, group, name, version } = properties;
    const resolved = await run.ctx.packages.resolve(feed, group, name, version, run.ctx.signal);
    if (resolved === undefined) {
      throw new ItemUnknownError(`the package ${title(properties)} ${version} is not in the feed ${feed}`);
    }
    for (const file of resolved.files) {
      const problem = literalPathProblem(file.path);
      if (problem !== undefined)
        throw new ItemUnknownError(
          `the package ${title(properties)} has a file path that ${problem.replace(/^it /, "")}`,
        );
    }
    return { properties, resolved };
  },

  async collect(desired, run) {
    const { executor } = run;
    const { target } = desired.properties;
    const recorded = findEntry(await readRegistry(run), desired.properties);
    const files: ActualPackage["files"][number][] = [];
    for (const file of desired.resolved.files) {
      run.ctx.signal.throwIfAborted();
      const where = path.posix.join(target, file.path);
      const stat = await executor.stat(where);
      if (stat === undefined || stat.kind !== "file")
        files.push({ path: file.path, desired: file.sha256, actual: null });
      else if (stat.size !== file.size)
        files.push({ path: file.path, desired: file.sha256, actual: `${stat.size} bytes` });
      else {
        const sha256 = await executor.hashFile(where);
        if (sha256 !== file.sha256) files.push({ path: file.path, desired: file.sha256, actual: sha256 });
      }
    }
    return { recordedVersion: recorded?.version, files };
  },

  compare(desired, actual) {
    const differences: Difference[] = [];
    if (actual.recordedVersion !== desired.resolved.version) {
      differences.push({
        property: "version",
        desired: desired.resolved.version,
        actual: actual.recordedVersion ?? null,
      });
    }
    for (const file of actual.files.slice(0, LISTED_FILE_DIFFERENCES)) {
      differences.push({ property: `file ${file.path}`, desired: file.desired, actual: file.actual });
    }
    if (actual.files.length > LISTED_FILE_DIFFERENCES) {
      differences.push({ property: "files", desired: 0, actual: actual.files.length });
    }
    return differences;
  },

  async apply(desired, _actual, run): Promise<Applied> {
    const { properties, resolved } = desired;
    const files = await install(desired, run);
    const installed: InstalledPackage = {
      feed: properties.feed,
      group: properties.group,
      name: properties.name,
      version: resolved.version,
      target: properties.target,
    };
    await record(installed, run);
    return {
      description: `installed ${title(properties)} ${resolved.version} from the feed ${properties.feed} into ${properties.target} (${files} files)`,
      installed,
    };
  },

  describe(desired, actual) {
    const { properties, resolved } = desired;
    const from = actual.recordedVersion === undefined ? "" : ` over ${actual.recordedVersion}`;
    const files = actual.files.length > 0 ? `, ${actual.files.length} files missing or different` : "";
    return `install ${title(properties)} ${resolved.version}${from} from the feed ${properties.feed} into ${properties.target}${files}`;
  },
};

function title(properties: Pick<PackageProperties, "group" | "name">): string {
  return properties.group === "" ? properties.name : `${properties.group}/${properties.name}`;
}

async function install(desired: DesiredPackage, run: ItemRun): Promise<number> {
  const { executor, ctx } = run;
  const { properties, resolved } = desired;
  const spool = await mkdtemp(path.join(spoolDirectory(executor), "wharf-package-"));
  try {
    // Spooled: a ZIP is read from its central directory, at its end, with random access.
    const file = path.join(spool, "package.upack");
    const source = await ctx.packages.open(
      properties.feed,
      properties.group,
      properties.name,
      resolved.version,
      ctx.signal,
    );
    await pipeline(source, createWriteStream(file, { flags: "wx", mode: 0o600 }), { signal: ctx.signal });
    // openZip refuses unsafe names (zip-slip), links, encryption, bombs; then the local headers.
    // Loaded here, not with the item types: an agent that installs no package never needs the ZIP code.
    const { openZip } = await import("../../storage/zip.js");
    const reader = await openZip(file);
    try {
      await reader.verifyLocalHeaders();
      await executor.mkdir(properties.target);
      const made = new Set<string>([properties.target]);
      const directory = async (where: string) => {
        if (made.has(where)) return;
        await executor.mkdir(where);
        made.add(where);
      };
      let files = 0;
      for (const entry of reader.entries()) {
        if (!entry.name.startsWith(PACKAGE_PREFIX) || entry.name === PACKAGE_PREFIX) continue;
        ctx.signal.throwIfAborted();
        const relative = entry.name.slice(PACKAGE_PREFIX.length).replace(/\/$/, "");
        const destination = path.posix.join(properties.target, relative);
        if (entry.isDirectory) {
          await directory(destination);
          continue;
        }
        await directory(path.posix.dirname(destination));
        await executor.writeFileAtomic(destination, reader.openEntry(entry.name), entry.mode ?? 0o644);
        files++;
      }
      return files;
    } finally {
      await reader.close();
    }
  } finally {
    await rm(spool, { recursive: true, force: true });
  }
}

/** The executor's own temporary directory when it has one (the local executor's tempDir option), else the system's. */
function spoolDirectory(executor: ItemRun["executor"]): string {
  const { tempDir } = executor as { readonly tempDir?: unknown };
  return typeof tempDir === "string" && tempDir !== "" ? tempDir : os.tmpdir();
}

async function readRegistry(run: ItemRun): Promise<RegistryEntry[]> {
  const stat = await run.executor.stat(PACKAGE_REGISTRY_PATH);
  if (stat === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse((await run.executor.readFile(PACKAGE_REGISTRY_PATH, MAX_REGISTRY_BYTES)).toString("utf8"));
  } catch (error) {
    if (error instanceof SyntaxError)
      throw new ItemUnknownError(`the package registry ${PACKAGE_REGISTRY_PATH} is not valid JSON`);
    throw error;
  }
  const packages = (parsed as { packages?: unknown } | null)?.packages;
  return Array.isArray(packages)
    ? (packages.filter((entry) => entry !== null && typeof entry === "object") as RegistryEntry[])
    : [];
}

function findEntry(entries: readonly RegistryEntry[], properties: PackageProperties): RegistryEntry | undefined {
  return entries.find(
    (entry) =>
      (entry.group ?? "") === properties.group && entry.name === properties.name && entry.path === properties.target,
  );
}

async function record(installed: InstalledPackage, run: ItemRun): Promise<void> {
  const entries = (await readRegistry(run)).filter(
    (entry) =>
      !((entry.group ?? "") === installed.group && entry.name === installed.name && entry.path === installed.target),
  );
  entries.push({
    group: installed.group,
    name: installed.name,
    version: installed.version,
    path: installed.target,
    feed: installed.feed,
    installationDate: new Date().toISOString(),
    installedUsing: "Wharf",
  });
  await run.executor.mkdir(path.posix.dirname(PACKAGE_REGISTRY_PATH));
  await run.executor.writeFileAtomic(
    PACKAGE_REGISTRY_PATH,
    Buffer.from(`${JSON.stringify({ packages: entries }, null, 2)}\n`),
    0o644,
  );
}
