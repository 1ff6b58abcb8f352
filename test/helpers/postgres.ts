import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "./free-port.js";

/**
 * A private PostgreSQL cluster (Debian's postgresql server package) on 127.0.0.1, in a temporary
 * directory, for the tests of cluster mode (research: next-areas.md 4.5). fsync is off: the tests
 * prove behaviour, not durability, and a cluster starts in ~2 s. The in-process tests share one
 * for the whole run (postgres-global.ts, shared-postgres.ts), each file with databases of its own.
 */
export interface PostgresServer {
  /** The cluster's maintenance database, as superuser `wharf`. */
  readonly url: string;
  /** A new empty database on this cluster; its URL. */
  createDatabase(): Promise<string>;
  /** Stops the server at once (as a crash would) and removes its files. */
  stop(): Promise<void>;
}

const run = promisify(execFile);

/** The newest installed server's bin directory, or undefined when there is none. */
function postgresBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], "bin");
}

export const postgresInstalled = () => postgresBinDir() !== undefined;

/** initdb and postgres refuse to run as root: as root, they run as Debian's `postgres` user. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
}

/** A new empty database on the cluster whose maintenance database `url` names; its URL. */
export async function createDatabaseOn(url: string): Promise<string> {
  const name = `wharf_${randomBytes(6).toString("hex")}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const database = new URL(url);
  database.pathname = `/${name}`;
  return database.toString();
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error("no PostgreSQL server installed (Debian package postgresql)");
  const dir = await mkdtemp(path.join(tmpdir(), "wharf-pg-"));
  chmodSync(dir, 0o777); // the server user writes its data, socket and log here
  const data = path.join(dir, "data");
  const port = await freePort();
  const [initdb, initArgs] = asServerUser(path.join(bin, "initdb"), [
    "-D",
    data,
    "-A",
    "trust",
    "-U",
    "wharf",
    "--no-sync",
    "-E",
    "UTF8",
    "--locale=C",
  ]);
  await run(initdb, initArgs);
  const options = `-h 127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const [pgCtl, startArgs] = asServerUser(path.join(bin, "pg_ctl"), [
    "-D",
    data,
    "-l",
    path.join(dir, "server.log"),
    "-o",
    options,
    "-w",
    "start",
  ]);
  await run(pgCtl, startArgs);
  const url = `postgres://wharf@127.0.0.1:${port}/postgres`;
  return {
    url,
    createDatabase: () => createDatabaseOn(url),
    async stop() {
      const [ctl, stopArgs] = asServerUser(path.join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"]);
      await new Promise<void>((resolve) => spawn(ctl, stopArgs, { stdio: "ignore" }).once("exit", () => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
