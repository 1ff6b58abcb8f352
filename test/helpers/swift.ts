import { type ChildProcess, execFile, spawn } from "node:child_process";
import { S3Client } from "@aws-sdk/client-s3";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "./free-port.js";

/**
 * A real OpenStack Swift (Debian's swift-proxy/-account/-container/-object) with the s3api and
 * tempauth middlewares on 127.0.0.1: unlike s3rver it checks V4 signatures and Content-MD5
 * (research: next-areas.md 3.2). Start-up takes ~20 s, so start it once per test file.
 */
export interface SwiftS3 {
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly logDir: string;
  stop(): Promise<void>;
}

/** Debian's python3: the swift packages are installed for it, not for a pyenv one on PATH. */
const PYTHON = "/usr/bin/python3";
const BIN = "/usr/bin";
export const swiftInstalled = () => existsSync(path.join(BIN, "swift-proxy-server")) && existsSync(PYTHON);

function serverConf(kind: "account" | "container" | "object", port: number, dir: string, user: string) {
  return `[DEFAULT]
bind_ip = 127.0.0.1
bind_port = ${port}
devices = ${path.join(dir, "devices")}
mount_check = false
swift_dir = ${dir}
workers = 0
user = ${user}
log_name = ${kind}-server

[pipeline:main]
pipeline = ${kind}-server

[app:${kind}-server]
use = egg:swift#${kind}

[${kind}-replicator]
[${kind}-auditor]
${kind === "object" ? "[object-updater]\n" : "[container-updater]\n"}`;
}

function proxyConf(port: number, dir: string, user: string) {
  return `[DEFAULT]
bind_ip = 127.0.0.1
bind_port = ${port}
swift_dir = ${dir}
workers = 0
user = ${user}
log_name = proxy-server

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
allow_account_management = true
account_autocreate = true

[filter:s3api]
use = egg:swift#s3api
location = us-east-1

[filter:tempauth]
use = egg:swift#tempauth
user_wharf_tester = testing .admin

[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:cache]
use = egg:swift#memcache
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:bulk]
use = egg:swift#bulk
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
`;
}

async function waitForPort(port: number, child: ChildProcess, name: string, logFile: string, deadline: number) {
  const { connect } = await import("node:net");
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`swift ${name} exited with ${child.exitCode}; see ${logFile}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`swift ${name} did not listen on ${port} in time; see ${logFile}`);
}

/** Starts the four Swift services on free loopback ports, with config, rings and data in a temp dir. */
export async function startSwift(timeoutMs = 60_000): Promise<SwiftS3> {
  const dir = await mkdtemp(path.join(tmpdir(), "wharf-swift-"));
  const logDir = path.join(dir, "logs");
  await mkdir(path.join(dir, "devices", "d1"), { recursive: true });
  await mkdir(logDir);
  // As root, Swift drops privileges to `user`; staying root keeps the temp dir writable.
  const user = process.getuid?.() === 0 ? "root" : (process.env.USER ?? "nobody");
  const ports = {
    proxy: await freePort(),
    account: await freePort(),
    container: await freePort(),
    object: await freePort(),
  };
  await writeFile(
    path.join(dir, "swift.conf"),
    `[swift-hash]\nswift_hash_path_prefix = wharf\nswift_hash_path_suffix = tests\n\n[storage-policy:0]\nname = gold\ndefault = yes\n`,
  );
  for (const kind of ["account", "container", "object"] as const) {
    const builder = path.join(dir, `${kind}.builder`);
    // Not execFileSync: each run takes a second or more of CPU, and a blocked event loop would
    // stall whatever the test process runs meanwhile (an app, another server's start).
    const ring = (...args: string[]) =>
      new Promise<void>((resolve, reject) =>
        execFile(PYTHON, [path.join(BIN, "swift-ring-builder"), builder, ...args], (error) =>
          error ? reject(error) : resolve(),
        ),
      );
    await ring("create", "8", "1", "1");
    await ring("add", `r1z1-127.0.0.1:${ports[kind]}/d1`, "1");
    try {
      await ring("rebalance");
    } catch (error) {
      // swift-ring-builder exits 1 with a warning ("balance ... not met") that is harmless here.
      if ((error as { code?: unknown }).code !== 1) throw error;
    }
    await writeFile(path.join(dir, `${kind}-server.conf`), serverConf(kind, ports[kind], dir, user));
  }
  await writeFile(path.join(dir, "proxy-server.conf"), proxyConf(ports.proxy, dir, user));

  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            child.kill("SIGTERM");
            setTimeout(() => child.kill("SIGKILL"), 3000).unref();
          }),
      ),
    );
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + timeoutMs;
    for (const kind of ["account", "container", "object", "proxy"] as const) {
      const logFile = path.join(logDir, `${kind}.log`);
      const log = createWriteStream(logFile);
      const child = spawn(PYTHON, [path.join(BIN, `swift-${kind}-server`), path.join(dir, `${kind}-server.conf`)], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout?.pipe(log);
      child.stderr?.pipe(log);
      children.push(child);
    }
    // All four start at once (~20 s on two cores); a service that dies shows in its log.
    const names = ["account", "container", "object", "proxy"] as const;
    await Promise.all(
      names.map((kind, i) =>
        waitForPort(ports[kind], children[i] as ChildProcess, kind, path.join(logDir, `${kind}.log`), deadline),
      ),
    );
    const endpoint = `http://127.0.0.1:${ports.proxy}`;
    while (Date.now() < deadline) {
      const ok = await fetch(`${endpoint}/healthcheck`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    return {
      endpoint,
      region: "us-east-1",
      accessKeyId: "wharf:tester",
      secretAccessKey: "testing",
      logDir,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * An SDK client for the Swift server, set as Wharf's S3 store sets its own (path-style, checksums
 * only when required); `secretAccessKey` defaults to the right one.
 */
export function swiftClient(server: SwiftS3, secretAccessKey = server.secretAccessKey): S3Client {
  return new S3Client({
    region: server.region,
    endpoint: server.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}
