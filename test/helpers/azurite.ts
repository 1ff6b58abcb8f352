import { type ChildProcess, spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import os from "node:os";
import path from "node:path";
import { freePort } from "./free-port.js";

/**
 * Azurite's blob service (Microsoft's emulator, the `azurite` devDependency) on 127.0.0.1 and a
 * free port, for the Azure store's tests (issue 15 section 3). It checks SharedKey signatures and
 * transactional MD5 as Azure does. `--skipApiVersionCheck`: the SDK may speak a newer API version
 * than the emulator knows; `--disableTelemetry`: azurite reports usage otherwise
 * (research next-areas.md 3.2). Start-up is about 1.5 s.
 */
const AZURITE_BLOB = path.resolve("node_modules/.bin/azurite-blob");
const START_TIMEOUT_MS = 20_000;

/** Azurite's one built-in account and its published key (not a secret: the same on every machine). */
export const AZURITE_ACCOUNT = "devstoreaccount1";
export const AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

export interface AzuriteServer {
  readonly port: number;
  /** A connection string for the built-in account, or with another key (to see it refused). */
  connectionString(accountKey?: string): string;
  /** How long the start took, health check included. */
  readonly startMs: number;
  stop(): Promise<void>;
}

export async function startAzurite(): Promise<AzuriteServer> {
  const started = Date.now();
  const location = await mkdtemp(path.join(os.tmpdir(), "wharf-azurite-"));
  const port = await freePort();
  // Run with this process's Node (the bin's shebang would pick whichever `node` is on the PATH).
  const child = spawn(
    process.execPath,
    [
      realpathSync(AZURITE_BLOB),
      ...["--blobHost", "127.0.0.1", "--blobPort", String(port), "--location", location],
      ...["--skipApiVersionCheck", "--disableTelemetry", "--silent"],
      // The account is always the path's first segment, also when a test reaches it by a host name.
      "--disableProductStyleUrl",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const stop = async () => {
    await stopProcess(child);
    await rm(location, { recursive: true, force: true });
  };
  try {
    await waitUntilAnswering(port, child, () => stderr);
  } catch (error) {
    await stop();
    throw error;
  }
  const blobEndpoint = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  return {
    port,
    startMs: Date.now() - started,
    connectionString: (accountKey = AZURITE_KEY) =>
      `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${accountKey};BlobEndpoint=${blobEndpoint};`,
    stop,
  };
}

/** Polls until azurite answers any HTTP request (an unsigned one gets a 4xx: that is an answer). */
async function waitUntilAnswering(port: number, child: ChildProcess, stderr: () => string) {
  const giveUp = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`azurite-blob exited (${child.exitCode ?? child.signalCode}) before answering: ${stderr()}`);
    }
    if (await answers(port)) return;
    if (Date.now() > giveUp)
      throw new Error(`azurite-blob did not answer on port ${port} within ${START_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: `/${AZURITE_ACCOUNT}?comp=list`, timeout: 1000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

async function stopProcess(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}
