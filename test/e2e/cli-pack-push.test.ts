import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openZip } from "../../src/storage/zip.js";
import { type RunningServer, runWharf, startServer } from "./process.js";

/** `wharf pack` and `wharf push` as a user runs them: child processes against a real server on loopback. */

let work: string;
let server: RunningServer;
const adminKey = `pack-admin-${randomBytes(16).toString("hex")}`;

beforeAll(async () => {
  work = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-pack-push-e2e-"));
  server = await startServer({ WHARF_DATA_DIR: path.join(work, "data"), WHARF_ADMIN_API_KEY: adminKey });
  const created = await api("POST", "/api/management/feeds/create", { name: "internal", feedType: "universal" });
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await server?.stop();
  await fs.rm(work, { recursive: true, force: true });
});

/** The client commands need no data directory: none is given, so any use of one would show. */
const wharf = (args: string[], env: Record<string, string> = {}) => runWharf(args, env);

async function api(method: string, url: string, body?: unknown, key = adminKey): Promise<Response> {
  return fetch(`${server.url}${url}`, {
    method,
    headers: { "X-ApiKey": key, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** A folder with nested files, an empty folder and a symlink that stays inside. */
async function makeFolder(name: string, files: Record<string, string | Buffer>): Promise<string> {
  const folder = path.join(work, name);
  for (const [file, content] of Object.entries(files)) {
    await fs.mkdir(path.dirname(path.join(folder, file)), { recursive: true });
    await fs.writeFile(path.join(folder, file), content);
  }
  return folder;
}

async function zipContents(file: string): Promise<Map<string, string>> {
  const zip = await openZip(file);
  try {
    const contents = new Map<string, string>();
    for (const entry of zip.entries()) {
      contents.set(entry.name, entry.isDirectory ? "<dir>" : await zip.readText(entry.name, 1024 * 1024));
    }
    return contents;
  } finally {
    await zip.close();
  }
}

const sha1 = (bytes: Buffer) => createHash("sha1").update(bytes).digest("hex");

describe("wharf pack", () => {
  it("makes a .upack: upack.json first, the folder under package/, inside symlinks as what they point to", async () => {
    const folder = await makeFolder("app", { "bin/run.sh": "#!/bin/sh\necho hi\n", "README.md": "# app\n" });
    await fs.mkdir(path.join(folder, "logs"));
    await fs.symlink("bin/run.sh", path.join(folder, "start"));
    await fs.chmod(path.join(folder, "bin/run.sh"), 0o755);
    const output = path.join(work, "app.upack");
    const result = await wharf([
      "pack",
      folder,
      "--name",
      "my-app",
      "--version",
      "1.2.0",
      "--group",
      "acme/tools",
      "--title",
      "My app",
      "--description",
      "Does things",
      "--tags",
      "web,tools",
      "--dependencies",
      "acme/lib:[1.0.0,2.0.0)",
      "--output",
      output,
    ]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toBe(
      `Wrote acme/tools/my-app 1.2.0 to ${output} (3 files, ${result.stdout.match(/, (.*)\)\./)?.[1]}).\n`,
    );

    const zip = await openZip(output);
    const names = zip.entries().map((entry) => entry.name);
    expect(names).toEqual(["upack.json", "package/README.md", "package/bin/run.sh", "package/logs/", "package/start"]);
    expect(zip.findEntry("package/bin/run.sh")?.mode).toBe(0o755);
    await zip.close();
    const contents = await zipContents(output);
    expect(contents.get("package/start")).toBe("#!/bin/sh\necho hi\n");
    const manifest = JSON.parse(contents.get("upack.json") ?? "") as Record<string, unknown>;
    expect(manifest).toMatchObject({
      group: "acme/tools",
      name: "my-app",
      version: "1.2.0",
      title: "My app",
      description: "Does things",
      tags: ["web", "tools"],
      dependencies: ["acme/lib:[1.0.0,2.0.0)"],
      createdUsing: expect.stringMatching(/^wharf\/\d+\.\d+\.\d+/) as unknown,
      createdDate: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) as unknown,
    });
  });

  it("stores files that are already compressed (by name) instead of deflating them again, and deflates the rest", async () => {
    // Both files compress well, so only the name decides: a stored entry keeps its size.
    const text = "the same line again\n".repeat(4096);
    const folder = await makeFolder("mixed", { "notes.txt": text, "lib/bundle.zip": text });
    const output = path.join(work, "mixed.upack");
    const result = await wharf(["pack", folder, "--name", "mixed", "--version", "1.0.0", "--output", output]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    const zip = await openZip(output);
    try {
      const bundle = zip.findEntry("package/lib/bundle.zip");
      const notes = zip.findEntry("package/notes.txt");
      expect(bundle).toMatchObject({ size: text.length, compressedSize: text.length });
      expect(notes?.size).toBe(text.length);
      expect(notes?.compressedSize).toBeLessThan(text.length / 10);
    } finally {
      await zip.close();
    }
    expect((await zipContents(output)).get("package/lib/bundle.zip")).toBe(text);
  });

  it("refuses an invalid version, name or group with the server's rules: usage error, exit 2, nothing written", async () => {
    const folder = await makeFolder("invalid", { "a.txt": "a" });
    const output = path.join(work, "invalid.upack");
    const cases: Array<[string[], RegExp]> = [
      [["--name", "app", "--version", "1.x"], /'version' '1\.x' is not a valid version/],
      [["--name", "my app", "--version", "1.0.0"], /'name' 'my app'/],
      [["--name", "app", "--version", "1.0.0", "--group", "/acme"], /'group' '\/acme'/],
      [["--name", "app", "--version", "1.0.0", "--title", "x".repeat(51)], /'title' .* at most 50 characters/],
      [["--name", "app"], /--version is required/],
    ];
    for (const [options, message] of cases) {
      const result = await wharf(["pack", folder, ...options, "--output", output]);
      expect(result, options.join(" ")).toMatchObject({ code: 2, stdout: "" });
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toContain("Usage:\n  wharf pack <folder>");
    }
    await expect(fs.stat(output)).rejects.toThrow(/ENOENT/);
  });

  it("refuses a symlink that leaves the folder, and leaves no file behind", async () => {
    const secret = await makeFolder("secret", { id_rsa: "PRIVATE" });
    const folder = await makeFolder("leaky", { "a.txt": "a" });
    await fs.symlink(path.join(secret, "id_rsa"), path.join(folder, "key"));
    await fs.mkdir(path.join(folder, "sub"));
    await fs.symlink("../../secret", path.join(folder, "sub", "up"));
    const output = path.join(work, "leaky.upack");
    const result = await wharf(["pack", folder, "--name", "leaky", "--version", "1.0.0", "--output", output]);
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toMatch(/^error: The symlink "key" points outside the folder/m);
    await expect(fs.stat(output)).rejects.toThrow(/ENOENT/);

    await fs.rm(path.join(folder, "key"));
    const nested = await wharf(["pack", folder, "--name", "leaky", "--version", "1.0.0", "--output", output]);
    expect(nested.code).toBe(1);
    expect(nested.stderr).toMatch(/The symlink "sub\/up" points outside the folder/);
    expect((await fs.readdir(work)).filter((name) => name.startsWith("leaky.upack"))).toEqual([]);
  });

  it("refuses a symlink loop and a special file (a FIFO would block the pack forever)", async () => {
    const folder = await makeFolder("odd", { "sub/a.txt": "a" });
    await fs.symlink("..", path.join(folder, "sub", "loop"));
    const output = path.join(work, "odd.upack");
    const loop = await wharf(["pack", folder, "--name", "odd", "--version", "1.0.0", "--output", output]);
    expect(loop).toMatchObject({ code: 1, stdout: "" });
    expect(loop.stderr).toMatch(/^error: The symlink "sub\/loop" loops back to a folder above it\.$/m);
    await fs.rm(path.join(folder, "sub", "loop"));
    expect(spawnSync("mkfifo", [path.join(folder, "pipe")]).status).toBe(0);
    const fifo = await wharf(["pack", folder, "--name", "odd", "--version", "1.0.0", "--output", output]);
    expect(fifo).toMatchObject({ code: 1, stdout: "" });
    expect(fifo.stderr).toMatch(/^error: "pipe" is neither a file nor a folder; refusing to pack it\.$/m);
    await expect(fs.stat(output)).rejects.toThrow(/ENOENT/);
  });

  it("--manifest gives the other upack.json fields, options override them, --no-audit leaves out who and when", async () => {
    const folder = await makeFolder("manifested", { "a.txt": "a" });
    const manifestFile = path.join(work, "base-upack.json");
    await fs.writeFile(
      manifestFile,
      JSON.stringify({ name: "base", version: "0.0.1", projectUrl: "https://example.com/app", _ci: { run: 42 } }),
    );
    const output = path.join(work, "manifested.upack");
    const result = await wharf([
      "pack",
      folder,
      "--manifest",
      manifestFile,
      "--version",
      "2.0.0-rc.1",
      "--no-audit",
      "--output",
      output,
    ]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    const manifest = JSON.parse((await zipContents(output)).get("upack.json") ?? "") as Record<string, unknown>;
    expect(manifest).toEqual({
      name: "base",
      version: "2.0.0-rc.1",
      projectUrl: "https://example.com/app",
      _ci: { run: 42 },
    });
  });

  it("does not pack its own output when that is written into the folder", async () => {
    const folder = await makeFolder("self", { "a.txt": "a" });
    const output = path.join(folder, "self-1.0.0.upack");
    for (let round = 0; round < 2; round += 1) {
      const result = await wharf(["pack", folder, "--name", "self", "--version", "1.0.0", "--output", output]);
      expect(result.code).toBe(0);
      expect([...(await zipContents(output)).keys()]).toEqual(["upack.json", "package/a.txt"]);
    }
  });
});

describe("wharf push", () => {
  const feedUrl = () => `${server.url}/upack/internal`;

  async function pack(name: string, version: string, files: Record<string, string | Buffer>): Promise<string> {
    const folder = await makeFolder(`${name}-${version}-${randomBytes(4).toString("hex")}`, files);
    const output = `${folder}.upack`;
    const result = await wharf(["pack", folder, "--name", name, "--version", version, "--output", output]);
    expect(result.code).toBe(0);
    return output;
  }

  it("uploads a package that downloads back byte for byte, and never replaces a version silently", async () => {
    const file = await pack("tool", "1.0.0", { "tool.txt": "first" });
    const pushed = await wharf(["push", file, feedUrl()], { WHARF_API_KEY: adminKey });
    expect(pushed).toMatchObject({ code: 0, stderr: "" });
    expect(pushed.stdout).toMatch(
      new RegExp(`^Pushed tool 1\\.0\\.0 to ${feedUrl()} \\(.* B in .* s, .*\\/s\\)\\.\\n$`),
    );
    const downloaded = Buffer.from(await (await api("GET", "/upack/internal/download/tool/1.0.0")).arrayBuffer());
    const original = await fs.readFile(file);
    expect(downloaded.equals(original)).toBe(true);

    // The same file again: nothing to do.
    const again = await wharf(["push", file, feedUrl(), "--api-key", adminKey]);
    expect(again).toMatchObject({ code: 0, stderr: "" });
    expect(again.stdout).toContain(
      `tool 1.0.0 is already in ${feedUrl()} with the same contents (sha1 ${sha1(original)}); nothing sent.`,
    );

    // Other contents under the same version: refused, although this key could overwrite.
    const other = await pack("tool", "1.0.0", { "tool.txt": "second" });
    const refused = await wharf(["push", other, feedUrl(), "--api-key", adminKey]);
    expect(refused).toMatchObject({ code: 1, stdout: "" });
    expect(refused.stderr).toMatch(/^error: tool 1\.0\.0 is already in .* with other contents .* pass --overwrite/m);
    const still = Buffer.from(await (await api("GET", "/upack/internal/download/tool/1.0.0")).arrayBuffer());
    expect(still.equals(original)).toBe(true);

    const replaced = await wharf(["push", other, feedUrl(), "--api-key", adminKey, "--overwrite"]);
    expect(replaced.code).toBe(0);
    expect(replaced.stderr).toBe("note: replaced the version the feed had.\n");
    const now = Buffer.from(await (await api("GET", "/upack/internal/download/tool/1.0.0")).arrayBuffer());
    expect(now.equals(await fs.readFile(other))).toBe(true);
  });

  it("a publishing key without overwrite: --overwrite is refused by the server (409), with its message", async () => {
    const created = await api("POST", "/api/api-keys/create", {
      type: "Feed",
      feed: "internal",
      packagePermissions: ["view", "add"],
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const first = await pack("lib", "2.0.0", { "lib.txt": "one" });
    expect((await wharf(["push", first, feedUrl(), "--api-key", key])).code).toBe(0);
    const second = await pack("lib", "2.0.0", { "lib.txt": "two" });
    const result = await wharf(["push", second, feedUrl(), "--api-key", key, "--overwrite"]);
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toMatch(/^error: The feed refused the upload: 409 Conflict: .+/m);
    expect(result.stderr).toContain("hint: the feed has this version");
  });

  it("a wrong key or none: the server's message and a non-zero exit, also for a body it refuses unread", async () => {
    // Big enough that the server answers long before the body could have been sent.
    const file = await pack("big", "1.0.0", { "data.bin": randomBytes(8 * 1024 * 1024) });
    const wrong = await wharf(["push", file, feedUrl(), "--api-key", "not-a-key"]);
    expect(wrong).toMatchObject({ code: 1, stdout: "" });
    expect(wrong.stderr).toBe(
      "error: The feed refused the upload: 403 Forbidden: The specified API key does not have the proper " +
        "permissions to perform this action.\n" +
        "hint: the key is unknown, or may not upload to this feed (a feed key needs the 'add' permission)\n",
    );
    const none = await wharf(["push", file, feedUrl()]);
    expect(none).toMatchObject({ code: 1, stdout: "" });
    expect(none.stderr).toMatch(/^error: The feed refused the upload: 401 Unauthorized: .+\nhint: give a key/);
    const missingFeed = await wharf(["push", file, `${server.url}/upack/no-such-feed`, "--api-key", adminKey]);
    expect(missingFeed.code).toBe(1);
    expect(missingFeed.stderr).toMatch(/404 Not Found: feed not found\nhint: check the feed URL/);
    expect((await api("GET", "/upack/internal/versions?name=big&version=1.0.0")).status).toBe(404);
  });

  it("refuses bad arguments (exit 2) and a file that is not a package (exit 1) before sending anything", async () => {
    const file = await pack("args", "1.0.0", { "a.txt": "a" });
    const usage = await wharf(["push", file]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("Usage:\n  wharf push <file.upack> <feed-url>");
    const both = await wharf(["push", file, feedUrl(), "--api-key", "k", "--user", "u:p"]);
    expect(both.code).toBe(2);
    const ftp = await wharf(["push", file, "ftp://example.com/upack/x"]);
    expect(ftp).toMatchObject({ code: 2 });
    expect(ftp.stderr).toContain("the feed URL must be http or https");

    const notZip = path.join(work, "not-a-package.upack");
    await fs.writeFile(notZip, "hello");
    const result = await wharf(["push", notZip, feedUrl(), "--api-key", adminKey]);
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toMatch(/^error: The archive is not a valid ZIP file/m);
    const unreachable = await wharf(["push", file, "http://127.0.0.1:1/upack/x", "--api-key", adminKey]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: Could not talk to http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/m);
  });
});
