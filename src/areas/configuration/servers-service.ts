import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { DomainError, invalid, notFound } from "../../domain/errors.js";
import type { DesiredItem } from "../../drift/model.js";
import { generateApiKey, hashApiKey } from "../security/api-key-hash.js";
import { checkEntityName, distinctNames } from "./entity-names.js";
import type { DriftMode, InfrastructureRepository } from "./infrastructure-repository.js";
import { parseConfigItems, showItems } from "./items.js";
import { localDirectory, remotePath } from "./server-paths.js";
import type { ServerInput } from "./servers-input.js";
import type { ServerRecord, ServersRepository, ServerWrite } from "./servers-repository.js";
import { parseVariables, presentVariables } from "./variables-model.js";

/**
 * Servers (docs/compat.md 8.2; issue 13 section 1): validation, references and agent keys. Shared
 * by `/api/infrastructure/servers/...` and `wharf servers`.
 */
export interface ServersService {
  /** Every server, or the one named (404 when none). */
  list(name?: string): Promise<ServerJson[]>;
  get(name: string): Promise<ServerJson>;
  /** An agent server's answer carries its key once, as `agentKey`. */
  create(name: string, input: ServerInput): Promise<ServerJson>;
  /** Missing properties stay; a `name` renames. A server turned into an agent gets a key (`agentKey`). */
  update(name: string, input: ServerInput): Promise<ServerJson>;
  delete(name: string): Promise<void>;
  /** A new key for an agent server, revoking the one it had; answered once, stored as its hash. */
  issueAgentKey(name: string): Promise<string>;
  revokeAgentKey(name: string): Promise<void>;
}

/** The answer (docs/compat.md 8.2). Sensitive variables show as `{ value: null, sensitive: true }`. */
export interface ServerJson {
  readonly name: string;
  readonly serverType: "local" | "agent" | "ssh";
  /** Otter's spelling, misspelled as Otter emits it. */
  readonly drift: "none" | "reportOnly" | "automaticallyRedmediate";
  readonly active: boolean;
  readonly roles: string[];
  readonly environments: string[];
  readonly variables: Record<string, unknown>;
  readonly hostName?: string;
  readonly port?: number;
  readonly credentialsName?: string;
  readonly tempPath?: string;
  readonly rootPath?: string;
  readonly hostKeySha256?: string;
  readonly items: Record<string, unknown>[];
  readonly agentConnected?: boolean;
  readonly agentLastSeen?: string;
  readonly agentVersion?: string;
  /** Only in the answer that issued it. */
  readonly agentKey?: string;
}

/** Connects to an SSH server and answers its host key's SHA-256 (src/drift/ssh-executor.ts). */
export type HostKeyFetcher = (host: string, port: number, timeoutMs: number) => Promise<string>;

export interface ServersServiceDeps {
  readonly servers: ServersRepository;
  readonly infrastructure: InfrastructureRepository;
  readonly config: Pick<Config, "deployRoot" | "sshTimeoutMs" | "agentOfflineMs">;
  readonly clock: Clock;
  readonly fetchHostKey: HostKeyFetcher;
}

const SERVER_TYPES = ["local", "agent", "ssh"] as const;
const DRIFT_MODES: Readonly<Record<string, DriftMode>> = {
  none: "none",
  reportonly: "reportOnly",
  automaticallyredmediate: "automaticallyRemediate",
  automaticallyremediate: "automaticallyRemediate",
};
const HOST_KEY = /^[A-Za-z0-9+/]{43}$/;

const unprocessable = (code: string, message: string) => new DomainError("unprocessable", code, message);
const serverNotFound = (name: string) => notFound("SERVER_NOT_FOUND", `The server '${name}' was not found.`);

function serverType(text: string): ServerWrite["type"] {
  const value = text.toLowerCase();
  if (value === "windows" || value === "powershell") {
    throw unprocessable(
      "SERVER_TYPE_UNSUPPORTED",
      `Wharf does not support '${text}' servers: it manages 'local' (the Wharf host, inside WHARF_DEPLOY_ROOT), ` +
        "'agent' (a machine running 'wharf agent') and 'ssh' servers.",
    );
  }
  if (!(SERVER_TYPES as readonly string[]).includes(value)) {
    throw invalid("INVALID_SERVER_TYPE", `'serverType' must be local, agent or ssh (got '${text}').`);
  }
  return value as ServerWrite["type"];
}

function driftMode(text: string): DriftMode {
  const mode = DRIFT_MODES[text.toLowerCase()];
  if (!mode)
    throw invalid("INVALID_DRIFT", `'drift' must be none, reportOnly or automaticallyRemediate (got '${text}').`);
  return mode;
}

function hostKey(text: string): string {
  const value = text.startsWith("SHA256:") ? text.slice("SHA256:".length) : text;
  const unpadded = value.replace(/=+$/, "");
  if (!HOST_KEY.test(unpadded)) {
    throw invalid(
      "INVALID_HOST_KEY",
      "'hostKeySha256' must be a SHA-256 fingerprint in base64 (as ssh-keygen -l prints it).",
    );
  }
  return unpadded;
}

const timestamp = (iso: string) => iso.slice(0, 19);

export function createServersService(deps: ServersServiceDeps): ServersService {
  const { servers, infrastructure, config, clock } = deps;
  const now = () => clock.now().toISOString();

  const toJson = (record: ServerRecord, agentKey?: string): ServerJson => {
    const { row } = record;
    const lastSeen = row.agent_last_seen_at ?? undefined;
    const agent = row.server_type === "agent";
    return {
      name: row.name,
      serverType: row.server_type,
      drift: row.drift_mode === "automaticallyRemediate" ? "automaticallyRedmediate" : row.drift_mode,
      active: row.active === 1,
      roles: [...record.roles],
      environments: [...record.environments],
      variables: presentVariables(record.variables),
      ...(row.host_name !== null && { hostName: row.host_name }),
      ...(row.port !== null && { port: row.port }),
      ...(record.credentialsName !== undefined && { credentialsName: record.credentialsName }),
      ...(row.temp_path !== null && { tempPath: row.temp_path }),
      ...(row.root_path !== null && { rootPath: row.root_path }),
      ...(row.host_key_sha256 !== null && { hostKeySha256: row.host_key_sha256 }),
      items: showItems(record.items),
      ...(agent && {
        agentConnected: lastSeen !== undefined && clock.now().getTime() - Date.parse(lastSeen) <= config.agentOfflineMs,
        ...(lastSeen !== undefined && { agentLastSeen: timestamp(lastSeen) }),
        ...(row.agent_version !== null && { agentVersion: row.agent_version }),
      }),
      ...(agentKey !== undefined && { agentKey }),
    };
  };

  const find = async (name: string) => {
    const record = await servers.find(name);
    if (!record) throw serverNotFound(name);
    return record;
  };

  /** The ids of the named roles or environments, in order; the first unknown name is refused. */
  const ids = async (what: "role" | "environment", names: readonly string[]) => {
    const found: number[] = [];
    for (const name of distinctNames(names)) {
      if (what === "role") {
        const role = await infrastructure.findRole(name);
        if (!role) throw unprocessable("ROLE_NOT_FOUND", `The role '${name}' does not exist.`);
        found.push(role.id);
        continue;
      }
      const environment = await infrastructure.findEnvironment(name);
      if (!environment) throw unprocessable("ENVIRONMENT_NOT_FOUND", `The environment '${name}' does not exist.`);
      found.push(environment.id);
    }
    return found;
  };

  const pinnedKey = async (hostName: string, port: number) => {
    try {
      return await deps.fetchHostKey(hostName, port, config.sshTimeoutMs);
    } catch (error) {
      throw new DomainError(
        "unprocessable",
        "SSH_HOST_UNREACHABLE",
        `Could not read the host key of ${hostName}:${port} to pin it (${(error as Error).message}); ` +
          "check the host and port, or give 'hostKeySha256'.",
        { cause: error },
      );
    }
  };

  /** The whole row to save: `current` (update) merged with `input`, every rule of the type checked. */
  const resolve = async (
    name: string,
    input: ServerInput,
    current: ServerRecord | undefined,
  ): Promise<{ write: ServerWrite; agentKey?: string }> => {
    checkEntityName("server", name);
    const row = current?.row;
    if (input.serverType === undefined && !row) {
      throw invalid("SERVER_TYPE_REQUIRED", "'serverType' is required: local, agent or ssh.");
    }
    const type = input.serverType !== undefined ? serverType(input.serverType) : (row?.server_type ?? "local");
    const given = <K extends keyof ServerInput>(field: K) => field in input && input[field] !== undefined;
    const text = (
      field: "hostName" | "credentialsName" | "tempPath" | "rootPath" | "hostKeySha256",
      stored: string | null,
    ) => (given(field) ? ((input[field] as string | null) ?? null) : stored);

    let rootPath: string | null = null;
    let hostName: string | null = null;
    let port: number | null = null;
    let credentialsId: number | null = null;
    let hostKeySha256: string | null = null;
    const tempText = text("tempPath", row?.temp_path ?? null);
    // A local server's temporary files are on the Wharf host: inside the deploy root like its root.
    let tempPath: string | null = null;
    if (tempText) {
      tempPath =
        type === "local"
          ? await localDirectory("tempPath", tempText, config.deployRoot)
          : remotePath("tempPath", tempText);
    }

    if (type === "local") {
      const stored = row?.server_type === "local" ? row.root_path : null;
      const wanted = text("rootPath", stored);
      // An unchanged root was checked when it was saved; the deploy root is checked again all the same.
      rootPath = await localDirectory("rootPath", wanted, config.deployRoot);
    } else if (type === "ssh") {
      const wasSsh = row?.server_type === "ssh";
      hostName = text("hostName", wasSsh ? row.host_name : null);
      if (!hostName) throw invalid("HOST_NAME_REQUIRED", "An ssh server needs 'hostName'.");
      port = given("port") ? (input.port ?? 22) : wasSsh ? (row.port ?? 22) : 22;
      if (port < 1 || port > 65535) throw invalid("INVALID_PORT", "'port' must be between 1 and 65535.");
      const credentialsName = given("credentialsName")
        ? (input.credentialsName ?? null)
        : wasSsh
          ? (current?.credentialsName ?? null)
          : null;
      if (!credentialsName)
        throw invalid("CREDENTIALS_REQUIRED", "An ssh server needs 'credentialsName' (wharf credentials create).");
      const credential = await servers.findCredential(credentialsName);
      if (!credential)
        throw unprocessable("CREDENTIALS_NOT_FOUND", `The credentials '${credentialsName}' do not exist.`);
      credentialsId = credential.id;
      const root = text("rootPath", wasSsh ? row.root_path : null);
      if (!root)
        throw invalid(
          "ROOT_PATH_REQUIRED",
          "An ssh server needs 'rootPath': the directory on the target its items stay in.",
        );
      rootPath = remotePath("rootPath", root);
      const moved = !wasSsh || hostName !== row.host_name || port !== row.port;
      const keyText = given("hostKeySha256") ? (input.hostKeySha256 ?? null) : moved ? null : row.host_key_sha256;
      hostKeySha256 = keyText ? hostKey(keyText) : null;
    }

    const variables =
      input.variables !== undefined
        ? parseVariables(input.variables, "variables", current?.variables)
        : (current?.variables ?? new Map());
    const roleIds = input.roles != null ? await ids("role", input.roles) : await ids("role", current?.roles ?? []);
    const environmentIds =
      input.environments != null
        ? await ids("environment", input.environments)
        : await ids("environment", current?.environments ?? []);
    const items: DesiredItem[] | undefined =
      input.items !== undefined ? parseConfigItems(input.items, null) : undefined;

    // Last, once everything else is valid: reading a host key may wait up to WHARF_SSH_TIMEOUT_SECONDS.
    if (type === "ssh" && hostKeySha256 === null) hostKeySha256 = await pinnedKey(hostName as string, port as number);

    let agentKey: string | undefined;
    let agentKeyHash: string | null | undefined;
    if (type === "agent" && row?.server_type !== "agent") {
      agentKey = generateApiKey();
      agentKeyHash = hashApiKey(agentKey);
    } else if (type !== "agent" && row?.server_type === "agent") {
      agentKeyHash = null;
    }
    const write: ServerWrite = {
      name,
      type,
      driftMode: input.drift !== undefined ? driftMode(input.drift) : (row?.drift_mode ?? "reportOnly"),
      active: input.active ?? (row ? row.active === 1 : true),
      rootPath,
      hostName,
      port,
      credentialsId,
      hostKeySha256,
      tempPath,
      variables,
      roleIds,
      environmentIds,
      items: items ?? (current ? undefined : []),
      ...(agentKeyHash !== undefined && { agentKeyHash }),
    };
    return { write, ...(agentKey !== undefined && { agentKey }) };
  };

  return {
    async list(name) {
      if (name !== undefined) return [toJson(await find(name))];
      return (await servers.list()).map((record) => toJson(record));
    },
    get: async (name) => toJson(await find(name)),
    async create(name, input) {
      const { write, agentKey } = await resolve(name, input, undefined);
      return toJson(await servers.insert(write, now()), agentKey);
    },
    async update(name, input) {
      const current = await find(name);
      const { write, agentKey } = await resolve(input.name ?? current.row.name, input, current);
      return toJson(await servers.update(current.row.id, write, now()), agentKey);
    },
    async delete(name) {
      if (!(await servers.delete(name))) throw serverNotFound(name);
    },
    async issueAgentKey(name) {
      const record = await find(name);
      if (record.row.server_type !== "agent") {
        throw unprocessable(
          "NOT_AN_AGENT",
          `The server '${record.row.name}' is a ${record.row.server_type} server, not an agent.`,
        );
      }
      const key = generateApiKey();
      if (!(await servers.setAgentKey(name, hashApiKey(key), now()))) throw serverNotFound(name);
      return key;
    },
    async revokeAgentKey(name) {
      const record = await find(name);
      if (record.row.server_type !== "agent") {
        throw unprocessable(
          "NOT_AN_AGENT",
          `The server '${record.row.name}' is a ${record.row.server_type} server, not an agent.`,
        );
      }
      await servers.setAgentKey(name, null, now());
    },
  };
}
