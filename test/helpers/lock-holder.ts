import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Where `require("better-sqlite3")` resolves for the child. */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The other process: takes the database's write lock as the CLI or a backup tool would
 * (BEGIN IMMEDIATE, holding it), says "locked", and commits when a line arrives on its stdin.
 */
const HOLDER = `
const Database = require("better-sqlite3");
const db = new Database(process.argv[1]);
db.exec("BEGIN IMMEDIATE");
process.stdout.write("locked\\n");
process.stdin.once("data", () => {
  db.exec("COMMIT");
  db.close();
  process.exit(0);
});
`;

export interface LockHolder {
  readonly pid: number;
  /** Commits and waits for the process to exit. */
  release(): Promise<void>;
}

/** A real second process holding the write lock of the SQLite file until release(). */
export async function holdWriteLock(file: string): Promise<LockHolder> {
  const child = spawn(process.execPath, ["-e", HOLDER, file], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
  const exited = once(child, "exit");
  let output = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("locked\n")) resolve();
    });
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`the lock holder exited (${code}) before taking the lock`)));
  });
  let released: Promise<void> | undefined;
  return {
    pid: child.pid as number,
    release() {
      released ??= (async () => {
        child.stdin.end("commit\n");
        const [code] = (await exited) as [number | null];
        if (code !== 0) throw new Error(`the lock holder exited with ${code}`);
      })();
      return released;
    },
  };
}
