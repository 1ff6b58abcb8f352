import { realpath } from "node:fs/promises";
import path from "node:path";
import type { Config } from "../../config.js";
import { DomainError } from "../../domain/errors.js";
import { checkItems, remediateItems } from "../../drift/engine.js";
import type { Executor } from "../../drift/executor.js";
import { createLocalExecutor } from "../../drift/local-executor.js";
import type { PackageSource, RunContext } from "../../drift/model.js";
import type { ServerTarget, ServerTransport, TransportRun } from "./transport.js";

/**
 * The transports that run the engine in this process (issue 13 section 3): `local` opens a local
 * executor on the server's root (which must lie inside WHARF_DEPLOY_ROOT, checked again here, as
 * the directory really is, links resolved), `ssh` an SFTP executor with the server's stored
 * credential and pinned host key. Each check or remediation opens its executor, runs the engine
 * and closes it. `agent` servers are reached by the agent's own transport (agent-*.ts), injected.
 */
export interface CredentialOpener {
  open(id: number): Promise<{ readonly userName: string; readonly privateKey?: string; readonly password?: string }>;
}

export interface ExecutorTransportDeps {
  readonly config: Pick<Config, "deployRoot" | "sshTimeoutMs">;
  readonly packages: PackageSource;
  /** The credentials store (credentials-repository.ts); absent: ssh servers cannot be reached. */
  readonly credentials?: CredentialOpener | undefined;
  /** Where local executors stage temporary files (the data directory's tmp). */
  readonly tempDir?: string | undefined;
}

export interface Transports {
  readonly local: ServerTransport;
  readonly ssh: ServerTransport;
  /** The transport of a server by its type; agent servers without an agent transport are refused. */
  of(server: ServerTarget): ServerTransport;
}

const unreachable = (message: string) => new DomainError("unavailable", "SERVER_UNREACHABLE", message);

/** `root` (absolute) lies inside `parent` or is it, both as written and with links resolved. */
async function checkInside(root: string, parent: string): Promise<void> {
  const inside = (child: string, base: string) => {
    const relative = path.relative(base, child);
    return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
  };
  const outside = () =>
    unreachable(
      `The server's root ${root} is not inside WHARF_DEPLOY_ROOT (${parent}); a local server may use only that.`,
    );
  if (!path.isAbsolute(root) || !inside(path.resolve(root), path.resolve(parent))) throw outside();
  // The nearest existing ancestor, resolved: a link inside the deploy root may not lead out of it.
  const realParent = await realpath(parent).catch(() => path.resolve(parent));
  let existing = path.resolve(root);
  for (;;) {
    const real = await realpath(existing).catch(() => undefined);
    if (real !== undefined) {
      if (!inside(real, realParent)) throw outside();
      return;
    }
    const up = path.dirname(existing);
    if (up === existing) return;
    existing = up;
  }
}

export function createExecutorTransports(deps: ExecutorTransportDeps, agent?: ServerTransport): Transports {
  const { config, packages } = deps;

  async function openLocal(server: ServerTarget): Promise<Executor> {
    if (config.deployRoot === undefined) {
      throw unreachable("Local servers need WHARF_DEPLOY_ROOT: the directory their roots must be inside.");
    }
    if (server.rootPath === undefined) throw unreachable(`The local server ${server.name} has no root directory.`);
    await checkInside(server.rootPath, config.deployRoot);
    return createLocalExecutor(server.rootPath, {
      description: `local ${server.rootPath}`,
      ...(deps.tempDir !== undefined && { tempDir: deps.tempDir }),
    });
  }

  async function openSsh(server: ServerTarget): Promise<Executor> {
    const { hostName, port, credentialsId, hostKeySha256, rootPath } = server;
    if (
      hostName === undefined ||
      credentialsId === undefined ||
      hostKeySha256 === undefined ||
      rootPath === undefined
    ) {
      throw unreachable(
        `The ssh server ${server.name} lacks its host name, credential, pinned host key or root directory.`,
      );
    }
    if (deps.credentials === undefined) throw unreachable("Stored credentials are not available in this process.");
    const credential = await deps.credentials.open(credentialsId);
    // Loaded when first needed: ssh2 stays out of a server that manages no ssh server.
    const { openSshExecutor } = await import("../../drift/ssh-executor.js");
    return openSshExecutor({
      host: hostName,
      port: port ?? 22,
      userName: credential.userName,
      ...(credential.privateKey !== undefined && { privateKey: credential.privateKey }),
      ...(credential.password !== undefined && { password: credential.password }),
      hostKeySha256,
      root: rootPath,
      timeoutMs: config.sshTimeoutMs,
      description: `ssh ${credential.userName}@${hostName}:${port ?? 22}`,
    });
  }

  const context = (run: TransportRun): RunContext => ({
    variables: run.variables,
    packages,
    signal: run.signal,
    log: (level, message) => run.log(level, message),
  });

  /** Opens the executor (an open that fails means the server cannot be reached), runs, closes. */
  const over = (open: (server: ServerTarget) => Promise<Executor>): ServerTransport => ({
    async check(server, items, run) {
      const executor = await opened(open, server);
      try {
        return await checkItems(items, executor, context(run));
      } finally {
        await executor.close().catch(() => undefined);
      }
    },
    async remediate(server, items, run) {
      const executor = await opened(open, server);
      try {
        return await remediateItems(items, executor, context(run), { simulate: run.simulate });
      } finally {
        await executor.close().catch(() => undefined);
      }
    },
  });

  const local = over(openLocal);
  const ssh = over(openSsh);
  return {
    local,
    ssh,
    of(server) {
      if (server.type === "local") return local;
      if (server.type === "ssh") return ssh;
      if (agent !== undefined) return agent;
      const refuse = async () => {
        throw unreachable(`Agent servers (${server.name}) cannot be reached: no agent transport in this process.`);
      };
      return { check: refuse, remediate: refuse };
    },
  };
}

async function opened(open: (server: ServerTarget) => Promise<Executor>, server: ServerTarget): Promise<Executor> {
  try {
    return await open(server);
  } catch (error) {
    if (error instanceof DomainError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw unreachable(`Could not reach ${server.name}: ${reason}`);
  }
}
