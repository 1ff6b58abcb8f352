import { createHash } from "node:crypto";
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  unlink,
  writeFile,
} from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkItems, remediateItems } from "../../src/drift/engine.js";
import type { Executor } from "../../src/drift/executor.js";
import { parseItems } from "../../src/drift/items/schema.js";
import { createLocalExecutor } from "../../src/drift/local-executor.js";
import type { ItemResult, LogLevel, PackageSource, RunContext } from "../../src/drift/model.js";
import { buildUpack, buildZip, renameInArchive } from "../helpers/upack-fixtures.js";

let base: string;
let root: string;
let outside: string;
let executor: Executor;
let logs: { level: LogLevel; message: string }[];

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "wharf-drift-items-"));
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "outside secret\n", { mode: 0o600 });
  executor = await createLocalExecutor(root);
  logs = [];
});

afterEach(async () => {
  await executor.close();
  await rm(base, { recursive: true, force: true });
});

function context(
  options: { variables?: Record<string, string>; packages?: PackageSource; signal?: AbortSignal } = {},
): RunContext {
  return {
    variables: new Map(Object.entries(options.variables ?? {}).map(([name, value]) => [name.toLowerCase(), value])),
    packages: options.packages ?? noPackages,
    signal: options.signal ?? new AbortController().signal,
    log: (level, message) => logs.push({ level, message }),
  };
}

const noPackages: PackageSource = {
  resolve: () => Promise.resolve(undefined),
  open: () => Promise.reject(new Error("no packages here")),
};

const statuses = (results: readonly ItemResult[]) =>
  Object.fromEntries(results.map((result) => [result.key, result.status]));
const onDisk = (itemPath: string) => path.join(root, itemPath);

/** Every entry under a directory with its kind, mode and content hash: to show that nothing changed. */
async function snapshot(directory: string): Promise<Record<string, string>> {
  const entries: Record<string, string> = {};
  const walk = async (current: string) => {
    for (const name of (await readdir(current)).sort()) {
      const full = path.join(current, name);
      const info = await lstat(full);
      const mode = (info.mode & 0o7777).toString(8);
      const key = path.relative(directory, full);
      if (info.isDirectory()) {
        entries[key] = `dir ${mode}`;
        await walk(full);
      } else if (info.isFile()) entries[key] = `file ${mode} ${sha256(await readFile(full))}`;
      else entries[key] = `other ${mode}`;
    }
  };
  await walk(directory);
  return entries;
}

describe("file and directory items", () => {
  const items = () =>
    parseItems(
      [
        { type: "directory", path: "/etc/app", mode: "0750" },
        { type: "file", path: "/etc/app/app.conf", template: "port=$Port\nhost=${Host}\nprice=$$5\n", mode: "0640" },
        { type: "file", path: "/etc/app/logo.bin", contentBase64: Buffer.from([0, 1, 2, 255]).toString("base64") },
        { type: "file", path: "/etc/app/secret.key", content: "hunter2-secret", sensitive: true, mode: "0600" },
        { type: "file", path: "/var/old.conf", exists: false },
        { type: "directory", path: "/var/cache/old", exists: false },
      ],
      "web",
    );
  const variables = { Port: "8080", HOST: "example.org" };

  it("reports drift, remediates byte for byte, and a second check finds nothing", async () => {
    await mkdir(onDisk("/var/cache/old/sub"), { recursive: true });
    await writeFile(onDisk("/var/cache/old/sub/x"), "x");
    await writeFile(onDisk("/var/old.conf"), "old");
    const first = await checkItems(items(), executor, context({ variables }));
    expect(statuses(first)).toEqual({
      "/etc/app": "drifted",
      "/etc/app/app.conf": "drifted",
      "/etc/app/logo.bin": "drifted",
      "/etc/app/secret.key": "drifted",
      "/var/old.conf": "drifted",
      "/var/cache/old": "drifted",
    });
    expect(first[4]?.differences).toEqual([{ property: "exists", desired: false, actual: true }]);

    const { changes, results } = await remediateItems(items(), executor, context({ variables }), { simulate: false });
    expect(changes.map((change) => change.key)).toEqual(first.map((result) => result.key));
    expect(results.every((result) => result.status === "current")).toBe(true);
    expect(await readFile(onDisk("/etc/app/app.conf"), "utf8")).toBe("port=8080\nhost=example.org\nprice=$5\n");
    expect(await readFile(onDisk("/etc/app/logo.bin"))).toEqual(Buffer.from([0, 1, 2, 255]));
    expect(await readFile(onDisk("/etc/app/secret.key"), "utf8")).toBe("hunter2-secret");
    expect((await stat(onDisk("/etc/app"))).mode & 0o7777).toBe(0o750);
    expect((await stat(onDisk("/etc/app/app.conf"))).mode & 0o7777).toBe(0o640);
    expect((await stat(onDisk("/etc/app/logo.bin"))).mode & 0o7777).toBe(0o644);
    expect((await stat(onDisk("/etc/app/secret.key"))).mode & 0o7777).toBe(0o600);
    await expect(stat(onDisk("/var/old.conf"))).rejects.toThrow();
    await expect(stat(onDisk("/var/cache/old"))).rejects.toThrow();

    const again = await checkItems(items(), executor, context({ variables }));
    expect(again.every((result) => result.status === "current" && result.differences.length === 0)).toBe(true);
  });

  it("finds exactly the items changed from outside: content, deletion, chmod", async () => {
    await remediateItems(items(), executor, context({ variables }), { simulate: false });
    const original = await readFile(onDisk("/etc/app/app.conf"));
    await writeFile(onDisk("/etc/app/app.conf"), "port=1\n");
    await unlink(onDisk("/etc/app/logo.bin"));
    await chmod(onDisk("/etc/app/secret.key"), 0o644);
    await chmod(onDisk("/etc/app"), 0o755);

    const results = await checkItems(items(), executor, context({ variables }));
    expect(statuses(results)).toEqual({
      "/etc/app": "drifted",
      "/etc/app/app.conf": "drifted",
      "/etc/app/logo.bin": "drifted",
      "/etc/app/secret.key": "drifted",
      "/var/old.conf": "current",
      "/var/cache/old": "current",
    });
    const byKey = new Map(results.map((result) => [result.key, result.differences]));
    expect(byKey.get("/etc/app")).toEqual([{ property: "mode", desired: "0750", actual: "0755" }]);
    expect(byKey.get("/etc/app/app.conf")).toEqual([
      { property: "sha256", desired: sha256(original), actual: sha256("port=1\n") },
      { property: "size", desired: original.length, actual: 7 },
    ]);
    expect(byKey.get("/etc/app/logo.bin")).toEqual([{ property: "exists", desired: true, actual: false }]);
    expect(byKey.get("/etc/app/secret.key")).toEqual([{ property: "mode", desired: "0600", actual: "0644" }]);

    // Simulate: descriptions of what would change, and not one byte or mode changed.
    const before = await snapshot(root);
    const simulated = await remediateItems(items(), executor, context({ variables }), { simulate: true });
    expect(await snapshot(root)).toEqual(before);
    expect(simulated.results).toEqual(results);
    expect(simulated.changes.map((change) => change.description)).toEqual([
      "would change the mode of /etc/app (0755 -> 0750)",
      `would write /etc/app/app.conf (sha256 ${sha256("port=1\n").slice(0, 12)}.. -> ${sha256(original).slice(0, 12)}..)`,
      `would create /etc/app/logo.bin (sha256 ${sha256(Buffer.from([0, 1, 2, 255])).slice(0, 12)}.., mode 0644)`,
      "would change the mode of /etc/app/secret.key (0644 -> 0600)",
    ]);

    const remediated = await remediateItems(items(), executor, context({ variables }), { simulate: false });
    expect(remediated.changes).toHaveLength(4);
    expect(remediated.results.every((result) => result.status === "current")).toBe(true);
    expect(await readFile(onDisk("/etc/app/app.conf"))).toEqual(original);
    expect((await stat(onDisk("/etc/app/secret.key"))).mode & 0o7777).toBe(0o600);
  });

  it("never shows or logs a sensitive file's content", async () => {
    await mkdir(onDisk("/etc/app"), { recursive: true });
    await writeFile(onDisk("/etc/app/secret.key"), "old-secret-value");
    const secretItems = parseItems(
      [{ type: "file", path: "/etc/app/secret.key", content: "hunter2-secret", sensitive: true }],
      null,
    );
    const checked = await checkItems(secretItems, executor, context());
    expect(checked[0]?.differences).toEqual([
      { property: "sha256", desired: sha256("hunter2-secret"), actual: sha256("old-secret-value") },
    ]);
    const { changes } = await remediateItems(secretItems, executor, context(), { simulate: false });
    const everything = JSON.stringify({ checked, changes, logs });
    expect(everything).not.toContain("hunter2");
    expect(everything).not.toContain("old-secret");
    expect(await readFile(onDisk("/etc/app/secret.key"), "utf8")).toBe("hunter2-secret");
  });

  it("a template only reads variables: an unknown one makes the item unknown, naming it; others go on", async () => {
    const templated = parseItems(
      [
        { type: "file", path: "/a.conf", template: "user=$User\nhome=${HOME}\n" },
        { type: "file", path: "/etc/passwd-copy", template: "/etc/passwd" },
        { type: "file", path: "/b.conf", template: "v=$Value" },
      ],
      null,
    );
    const variables = { User: "web", Value: "$User ${Home} $(cat /etc/passwd)" };
    const { results } = await remediateItems(templated, executor, context({ variables }), { simulate: false });
    expect(results[0]).toMatchObject({ status: "unknown", error: "the template uses ${HOME}, which is not defined" });
    expect(results[1]?.status).toBe("current");
    expect(results[2]?.status).toBe("current");
    // The file name is text, never read; a variable's value is not expanded again.
    expect(await readFile(onDisk("/etc/passwd-copy"), "utf8")).toBe("/etc/passwd");
    expect(await readFile(onDisk("/b.conf"), "utf8")).toBe("v=$User ${Home} $(cat /etc/passwd)");
    await expect(stat(onDisk("/a.conf"))).rejects.toThrow();
  });

  it("a file where a directory is wanted (and the reverse) is drift that remediation reports without destroying", async () => {
    await mkdir(onDisk("/etc/app.conf"), { recursive: true });
    await writeFile(onDisk("/etc/app.conf/inside"), "kept");
    await writeFile(onDisk("/data"), "a file");
    const clashing = parseItems(
      [
        { type: "file", path: "/etc/app.conf", content: "x" },
        { type: "directory", path: "/data" },
        { type: "file", path: "/ok.txt", content: "ok" },
      ],
      null,
    );
    const { results } = await remediateItems(clashing, executor, context(), { simulate: false });
    expect(results.map((result) => [result.status, result.differences[0]?.property])).toEqual([
      ["drifted", "kind"],
      ["drifted", "kind"],
      ["current", undefined],
    ]);
    expect(results[0]?.error).toMatch(/^\/etc\/app\.conf is a directory/);
    expect(results[1]?.error).toMatch(/^\/data is a file, not a directory/);
    expect(await readFile(onDisk("/etc/app.conf/inside"), "utf8")).toBe("kept");
  });
});

describe("many files at once", () => {
  it("creates files in shared new directories without racing, in the items' order of results", async () => {
    const raw = Array.from({ length: 60 }, (_, i) => ({
      type: "file",
      path: `/deep/a${i % 4}/b${i % 3}/f${i}.txt`,
      content: `file ${i}\n`,
    }));
    const items = parseItems([{ type: "directory", path: "/deep", mode: "0700" }, ...raw], null);
    const { changes, results } = await remediateItems(items, executor, context(), { simulate: false });
    expect(changes.map((change) => change.key)).toEqual(items.map((item) => item.key));
    expect(results.every((result) => result.status === "current")).toBe(true);
    expect((await stat(onDisk("/deep"))).mode & 0o7777).toBe(0o700);
    expect(await readFile(onDisk("/deep/a3/b2/f59.txt"), "utf8")).toBe("file 59\n");
  });
});

describe("config-key items", () => {
  const json = '{\n    "server": {\n        "port": 80,\n        "host": "a"\n    },\n    "debug": true\n}\n';
  const ini = "; top comment\nname=app\n\n[db]\n# the host\nhost = old.example\nport = 5432\n\n[cache]\nsize=10\n";
  const env = "# settings\nexport PORT=80\nNAME='my app' # trailing\nEMPTY=\n";

  const keyItems = () =>
    parseItems(
      [
        { type: "config-key", path: "/app/app.json", format: "json", key: "server.port", value: 8080 },
        { type: "config-key", path: "/app/app.json", format: "json", key: "features.beta", value: "on" },
        { type: "config-key", path: "/app/app.json", format: "json", key: "debug", exists: false },
        { type: "config-key", path: "/app/app.ini", format: "ini", key: "db.host", value: "new.example" },
        { type: "config-key", path: "/app/app.ini", format: "ini", key: "name", value: "app" },
        { type: "config-key", path: "/app/app.ini", format: "ini", key: "log.level", value: "info" },
        { type: "config-key", path: "/app/.env", format: "env", key: "PORT", value: "8080" },
        { type: "config-key", path: "/app/.env", format: "env", key: "NAME", value: "my app" },
        { type: "config-key", path: "/app/.env", format: "env", key: "TOKEN", value: "s3cr3t value", sensitive: true },
        { type: "config-key", path: "/app/new.env", format: "env", key: "A", value: "1" },
      ],
      null,
    );

  it("sets one key, keeps the rest of the file, and finds no drift afterwards", async () => {
    await mkdir(onDisk("/app"));
    await writeFile(onDisk("/app/app.json"), json);
    await writeFile(onDisk("/app/app.ini"), ini);
    await writeFile(onDisk("/app/.env"), env);
    const first = await checkItems(keyItems(), executor, context());
    expect(first.map((result) => result.status)).toEqual([
      "drifted",
      "drifted",
      "drifted",
      "drifted",
      "current",
      "drifted",
      "drifted",
      "current",
      "drifted",
      "drifted",
    ]);
    expect(first[0]?.differences).toEqual([{ property: "value", desired: 8080, actual: 80 }]);
    const token = first[8]?.differences ?? [];
    expect(token).toEqual([{ property: "exists", desired: true, actual: false }]);

    const { results } = await remediateItems(keyItems(), executor, context(), { simulate: false });
    expect(results.every((result) => result.status === "current")).toBe(true);
    expect(await readFile(onDisk("/app/app.json"), "utf8")).toBe(
      '{\n    "server": {\n        "port": 8080,\n        "host": "a"\n    },\n    "features": {\n        "beta": "on"\n    }\n}\n',
    );
    expect(await readFile(onDisk("/app/app.ini"), "utf8")).toBe(
      "; top comment\nname=app\n\n[db]\n# the host\nhost = new.example\nport = 5432\n\n[cache]\nsize=10\n\n[log]\nlevel = info\n",
    );
    expect(await readFile(onDisk("/app/.env"), "utf8")).toBe(
      "# settings\nexport PORT=8080\nNAME='my app' # trailing\nEMPTY=\nTOKEN='s3cr3t value'\n",
    );
    expect(await readFile(onDisk("/app/new.env"), "utf8")).toBe("A=1\n");
    expect(JSON.stringify(logs)).not.toContain("s3cr3t");

    const again = await checkItems(keyItems(), executor, context());
    expect(again.every((result) => result.status === "current")).toBe(true);
  });

  it("a sensitive value differs by hash only; a file that does not parse makes the item unknown", async () => {
    await mkdir(onDisk("/app"));
    await writeFile(onDisk("/app/.env"), "TOKEN=old-token\n");
    await writeFile(onDisk("/app/app.json"), "{ not json");
    const items = parseItems(
      [
        { type: "config-key", path: "/app/.env", format: "env", key: "TOKEN", value: "new-token", sensitive: true },
        { type: "config-key", path: "/app/app.json", format: "json", key: "a", value: 1 },
      ],
      null,
    );
    const [secret, broken] = await checkItems(items, executor, context());
    expect(secret?.differences).toEqual([
      { property: "value", desired: `sha256:${sha256("new-token")}`, actual: `sha256:${sha256("old-token")}` },
    ]);
    expect(broken).toMatchObject({ status: "unknown", error: "/app/app.json is not valid JSON" });
    expect(JSON.stringify(logs)).not.toContain("old-token");
  });

  it("keeps CRLF line endings", async () => {
    await mkdir(onDisk("/app"));
    await writeFile(onDisk("/app/win.ini"), "[a]\r\nb=1\r\nc=2\r\n");
    const items = parseItems(
      [{ type: "config-key", path: "/app/win.ini", format: "ini", key: "a.b", value: "9" }],
      null,
    );
    await remediateItems(items, executor, context(), { simulate: false });
    expect(await readFile(onDisk("/app/win.ini"), "utf8")).toBe("[a]\r\nb=9\r\nc=2\r\n");
  });
});

describe("process items", () => {
  it("are current when a process matches, drifted when none does, and remediation changes nothing", async () => {
    const items = parseItems(
      [
        { type: "process", pattern: "node" },
        { type: "process", pattern: "*no-such-process-wharf-test*" },
      ],
      null,
    );
    const { changes, results } = await remediateItems(items, executor, context(), { simulate: false });
    expect(results.map((result) => result.status)).toEqual(["current", "drifted"]);
    expect(results[1]?.differences).toEqual([{ property: "running", desired: true, actual: false }]);
    expect(results[1]?.error).toMatch(/check only/);
    expect(changes).toEqual([]);
  });

  it("are unknown where the transport cannot list processes", async () => {
    const blind: Executor = {
      ...executor,
      description: executor.description,
      processes: () => Promise.resolve(undefined),
    };
    const [result] = await checkItems(parseItems([{ type: "process", pattern: "node" }], null), blind, context());
    expect(result).toMatchObject({ status: "unknown", error: "this transport cannot list the target's processes" });
  });
});

describe("package items", () => {
  const files = { "index.html": "<h1>v1</h1>", "lib/app.js": "console.log(1)" };

  async function sourceOf(
    packages: Record<string, Buffer>,
    listed?: Record<string, Record<string, string>>,
  ): Promise<PackageSource> {
    return {
      resolve: (_feed, _group, _name, version) => {
        const chosen = version === "latest" ? Object.keys(packages).sort().at(-1) : version;
        if (chosen === undefined || packages[chosen] === undefined) return Promise.resolve(undefined);
        const contents = listed?.[chosen] ?? files;
        return Promise.resolve({
          version: chosen,
          files: Object.entries(contents).map(([file, content]) => ({
            path: file,
            size: Buffer.byteLength(content),
            sha256: sha256(content),
          })),
        });
      },
      open: (_feed, _group, _name, version) => Promise.resolve(Readable.from([packages[version] as Buffer])),
    };
  }

  it("installs, records, detects a changed or missing file and a version change, and restores them", async () => {
    const upack = await buildUpack({ group: "acme", name: "web", version: "1.0.0", files });
    const packages = await sourceOf({ "1.0.0": upack });
    const items = parseItems(
      [{ type: "package", feed: "apps", group: "acme", name: "web", version: "latest", target: "/srv/web" }],
      null,
    );
    const first = await checkItems(items, executor, context({ packages }));
    expect(first[0]?.status).toBe("drifted");
    expect(first[0]?.differences[0]).toEqual({ property: "version", desired: "1.0.0", actual: null });

    const { changes, results } = await remediateItems(items, executor, context({ packages }), { simulate: false });
    expect(results[0]?.status).toBe("current");
    expect(changes).toEqual([
      {
        type: "package",
        key: "apps/acme/web::/srv/web",
        description: "installed acme/web 1.0.0 from the feed apps into /srv/web (2 files)",
        installed: { feed: "apps", group: "acme", name: "web", version: "1.0.0", target: "/srv/web" },
      },
    ]);
    expect(await readFile(onDisk("/srv/web/lib/app.js"), "utf8")).toBe("console.log(1)");
    const registry = JSON.parse(await readFile(onDisk("/.wharf/packages.json"), "utf8")) as { packages: unknown[] };
    expect(registry.packages).toEqual([
      expect.objectContaining({ group: "acme", name: "web", version: "1.0.0", path: "/srv/web", feed: "apps" }),
    ]);
    expect((await checkItems(items, executor, context({ packages })))[0]?.status).toBe("current");

    await writeFile(onDisk("/srv/web/index.html"), "<h1>hacked</h1>");
    await unlink(onDisk("/srv/web/lib/app.js"));
    const drifted = await checkItems(items, executor, context({ packages }));
    expect(drifted[0]?.differences).toEqual([
      { property: "file index.html", desired: sha256("<h1>v1</h1>"), actual: "15 bytes" },
      { property: "file lib/app.js", desired: sha256("console.log(1)"), actual: null },
    ]);
    await remediateItems(items, executor, context({ packages }), { simulate: false });
    expect(await readFile(onDisk("/srv/web/index.html"), "utf8")).toBe("<h1>v1</h1>");

    // A new version in the feed: `latest` moves to it.
    const files2 = { "index.html": "<h1>v2</h1>", "lib/app.js": "console.log(2)" };
    const packages2 = await sourceOf(
      { "1.0.0": upack, "1.1.0": await buildUpack({ group: "acme", name: "web", version: "1.1.0", files: files2 }) },
      { "1.0.0": files, "1.1.0": files2 },
    );
    const simulated = await remediateItems(items, executor, context({ packages: packages2 }), { simulate: true });
    expect(simulated.changes[0]?.description).toBe(
      "would install acme/web 1.1.0 over 1.0.0 from the feed apps into /srv/web, 2 files missing or different",
    );
    expect(await readFile(onDisk("/srv/web/index.html"), "utf8")).toBe("<h1>v1</h1>");
    const upgraded = await remediateItems(items, executor, context({ packages: packages2 }), { simulate: false });
    expect(upgraded.results[0]?.status).toBe("current");
    expect(upgraded.changes[0]?.installed?.version).toBe("1.1.0");
  });

  it("spools the package in the executor's tempDir", async () => {
    const packages = await sourceOf({ "1.0.0": await buildUpack({ name: "web", version: "1.0.0", files }) });
    const items = parseItems(
      [{ type: "package", feed: "apps", name: "web", version: "1.0.0", target: "/srv/web" }],
      null,
    );
    const spoolless = await createLocalExecutor(root, { tempDir: path.join(base, "no-such-temp") });
    const failed = await remediateItems(items, spoolless, context({ packages }), { simulate: false });
    expect(failed.results[0]?.error).toContain(path.join(base, "no-such-temp"));
    await mkdir(path.join(base, "spool"));
    const spooling = await createLocalExecutor(root, { tempDir: path.join(base, "spool") });
    const done = await remediateItems(items, spooling, context({ packages }), { simulate: false });
    expect(done.results[0]?.status).toBe("current");
    expect(await readdir(path.join(base, "spool"))).toEqual([]);
  });

  it("a package missing from its feed is unknown", async () => {
    const items = parseItems(
      [{ type: "package", feed: "apps", name: "web", version: "9.9.9", target: "/srv/web" }],
      null,
    );
    const [result] = await checkItems(items, executor, context());
    expect(result).toMatchObject({ status: "unknown", error: "the package web 9.9.9 is not in the feed apps" });
  });

  it("refuses a package with zip-slip entries and writes nothing outside the root", async () => {
    const honest = await buildZip({
      "upack.json": JSON.stringify({ name: "evil", version: "1.0.0" }),
      "package/aaaa/bbbbbb/e.txt": "pwned",
    });
    const hostile = renameInArchive(honest, "package/aaaa/bbbbbb/", "package/../../../../");
    const packages = await sourceOf({ "1.0.0": hostile }, { "1.0.0": { "ok.txt": "fine" } });
    const items = parseItems(
      [{ type: "package", feed: "apps", name: "evil", version: "1.0.0", target: "/srv/evil" }],
      null,
    );
    const before = await snapshot(base);
    const { changes, results } = await remediateItems(items, executor, context({ packages }), { simulate: false });
    expect(changes).toEqual([]);
    expect(results[0]?.status).toBe("drifted");
    expect(results[0]?.error).toMatch(/\.\./);
    expect(await snapshot(outside)).toEqual({ "secret.txt": before["outside/secret.txt"] });
    await expect(stat(path.join(base, "e.txt"))).rejects.toThrow();
  });

  it("refuses resolved file paths that leave the target", async () => {
    const upack = await buildUpack({ name: "web", version: "1.0.0", files });
    const packages = await sourceOf({ "1.0.0": upack }, { "1.0.0": { "../../outside/secret.txt": "x" } });
    const items = parseItems(
      [{ type: "package", feed: "apps", name: "web", version: "1.0.0", target: "/srv/web" }],
      null,
    );
    const [result] = await checkItems(items, executor, context({ packages }));
    expect(result).toMatchObject({ status: "unknown" });
    expect(result?.error).toMatch(/'\.\.' segment/);
  });
});

describe("attacks on the root", () => {
  it("items through a link pointing outside are unknown or refused, and nothing outside changes", async () => {
    await symlink(outside, onDisk("/out"));
    await symlink(path.join(outside, "secret.txt"), onDisk("/secret-link"));
    const before = await snapshot(outside);
    const items = parseItems(
      [
        { type: "file", path: "/out/secret.txt", content: "pwned", mode: "0777" },
        { type: "file", path: "/out/new.txt", content: "pwned" },
        { type: "directory", path: "/out/made" },
        { type: "directory", path: "/out", mode: "0777" },
        { type: "config-key", path: "/out/app.env", format: "env", key: "A", value: "1" },
        { type: "config-key", path: "/secret-link", format: "env", key: "A", value: "1" },
        { type: "file", path: "/secret-link/x", content: "pwned" },
        { type: "file", path: "/fine.txt", content: "fine" },
      ],
      null,
    );
    const { results } = await remediateItems(items, executor, context(), { simulate: false });
    expect(results.slice(0, 3).map((result) => result.status)).toEqual(["unknown", "unknown", "unknown"]);
    for (const result of results.slice(0, 3)) expect(result.error).toMatch(/outside the root/);
    expect(results[7]?.status).toBe("current");
    expect(await snapshot(outside)).toEqual(before);
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
  });

  it("paths with '..' or outside the root never reach the disk", async () => {
    expect(() => parseItems([{ type: "file", path: "/../outside/secret.txt", content: "x" }], null)).toThrow(/'\.\.'/);
    // An item that skipped validation is still refused by the executor.
    const forged = [
      {
        type: "file" as const,
        key: "/../../outside/x",
        role: null,
        sensitive: false,
        properties: { path: "/../../outside/x", exists: true, content: "pwned" },
      },
    ];
    const { results } = await remediateItems(forged, executor, context(), { simulate: false });
    expect(results[0]).toMatchObject({ status: "unknown" });
    expect(results[0]?.error).toMatch(/'\.\.' is not allowed/);
    expect(await readdir(outside)).toEqual(["secret.txt"]);
    // Absolute host paths are the root's own.
    const hostPath = parseItems([{ type: "file", path: path.join(outside, "secret.txt"), exists: false }], null);
    await remediateItems(hostPath, executor, context(), { simulate: false });
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
  });

  it("an aborted run stops", async () => {
    const controller = new AbortController();
    controller.abort(new Error("stopped"));
    const items = parseItems([{ type: "file", path: "/a", content: "a" }], null);
    await expect(checkItems(items, executor, context({ signal: controller.signal }))).rejects.toThrow("stopped");
  });
});
