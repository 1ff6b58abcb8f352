import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { dataDirRefusal } from "../../src/storage/data-dir-access.js";
import { type RunResult, runWharf } from "./process.js";

/**
 * A data directory Wharf cannot write is an operator's mistake to fix, not a crash: one line that
 * names the directory, the user id the process runs as and what to do, exit 1, no stack trace, for
 * the server and for the CLI alike (real processes).
 */

let parent: string;

beforeEach(async () => {
  parent = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-e2e-datadir-"));
});
afterEach(async () => {
  await fs.rm(parent, { recursive: true, force: true });
});

const UID = process.getuid?.() ?? -1;
const GID = process.getgid?.() ?? -1;

/**
 * Root writes anywhere, whatever the permissions say (and CI runs as root): there the process runs
 * without the capabilities that let root ignore them (setpriv, util-linux), which is how the
 * refusal looks to any other user. Elsewhere, a directory of ours without write permission.
 */
async function unwritableDirectory(): Promise<{ dir: string; wrapper: string[] }> {
  const dir = path.join(parent, "data");
  await fs.mkdir(dir);
  if (UID !== 0) {
    await fs.chmod(dir, 0o555);
    return { dir, wrapper: [] };
  }
  await fs.chown(dir, 65534, 65534);
  await fs.chmod(dir, 0o755);
  return { dir, wrapper: ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] };
}

function expectOneLineRefusal(result: RunResult, ...fragments: string[]): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stderr.trim().split("\n"), result.stderr).toHaveLength(1);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  for (const fragment of fragments) expect(result.stderr).toContain(fragment);
  expect(result.stdout).toBe("");
}

describe("an unwritable data directory (real processes)", () => {
  it("stops the server and the CLI with one line naming the directory, the user id and the fix", async () => {
    const { dir, wrapper } = await unwritableDirectory();
    const env = { WHARF_DATA_DIR: dir, WHARF_PORT: "0", WHARF_HOST: "127.0.0.1" };
    for (const args of [["serve"], ["feeds", "list"]]) {
      const result = await runWharf(args, env, 20_000, wrapper);
      expectOneLineRefusal(
        result,
        `Cannot write to the data directory ${dir} as user id ${UID}, group id ${GID}: permission denied`,
        `chown -R ${UID}:${GID} ${dir}`,
        "WHARF_DATA_DIR",
      );
    }
    expect(await fs.readdir(dir)).toEqual([]);
  });

  it("names a database file another user owns in a directory that is writable", async () => {
    const { dir, wrapper } = await unwritableDirectory();
    await fs.chmod(dir, 0o777);
    const database = path.join(dir, "wharf.sqlite");
    await fs.writeFile(database, "");
    await fs.chmod(database, 0o444);
    if (UID === 0) await fs.chown(database, 65534, 65534);
    const result = await runWharf(["serve"], { WHARF_DATA_DIR: dir, WHARF_PORT: "0" }, 20_000, wrapper);
    expectOneLineRefusal(result, `permission denied on ${database}`, `user id ${UID}`, "WHARF_DATA_DIR");
  });

  it("stops with one line when a file stands where the directory, or a folder on its path, should be", async () => {
    const file = path.join(parent, "not-a-directory");
    await fs.writeFile(file, "");
    for (const dir of [file, path.join(file, "data")]) {
      const result = await runWharf(["serve"], { WHARF_DATA_DIR: dir, WHARF_PORT: "0" });
      expectOneLineRefusal(result, `Cannot use ${dir} as the data directory`, "is a file", "WHARF_DATA_DIR");
    }
  });
});

describe("dataDirRefusal", () => {
  it("says a read-only file system is one, and leaves other errors to be reported as they are", () => {
    const erofs = Object.assign(new Error("read-only"), { code: "EROFS", path: "/data/.write-test-1" });
    expect(dataDirRefusal(erofs, "/data")).toBe(
      `Cannot write to the data directory /data as user id ${UID}, group id ${GID}: it is on a read-only file system. ` +
        "Mount it read-write, or set WHARF_DATA_DIR to a directory this user can write.",
    );
    expect(dataDirRefusal(Object.assign(new Error("full"), { code: "ENOSPC" }), "/data")).toBeUndefined();
  });
});
