import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { invalid, notFound } from "../../domain/errors.js";
import { byDatabase, type CacheVersion, type MetadataDb } from "../../storage/metadata-db.js";
import type { CollectionsRepository } from "./collections-repository.js";
import type { InfrastructureRepository } from "./infrastructure-repository.js";
import type { EntityType, OpenRemediation, RemediationRepository } from "./remediation-repository.js";
import {
  createStatusRepository,
  type Memberships,
  type StatusFacts,
  type StatusRepository,
  type StatusServerRow,
} from "./status-repository.js";
import { createPostgresStatusRepository } from "./status-repository-postgres.js";

/**
 * Configuration status objects and server items as `/api/configuration` answers them
 * (docs/seed-api.md B "Configuration status object", "Server configuration item object";
 * docs/compat.md 8.1; research next-areas.md 1.5.6).
 *
 * A server's status, first rule that holds: `disabled` (inactive) > `executing` (a check or a
 * remediation of it running) > `error` (its last check failed, or its agent has not polled for
 * WHARF_AGENT_OFFLINE_SECONDS) > `pendingRemediation` (drifted and a remediation job waits) >
 * `drifted` / `current` (items drifted in its last check, or none) > `unknown` (never checked, or
 * drift mode `none`).
 *
 * Roles and environments are aggregated from their active servers (a role's: the servers whose
 * roles include it, through dependencies too), the first status of the list above that any of them
 * has; a role counts only its own items (collectionRole = the role). All servers inactive:
 * `disabled`; no servers: `unknown`. Their collectionDate is the oldest last check among them.
 *
 * Field presence: `errorText` only on `error`; `latestCollectionId` only for servers (a number, or
 * null when never checked); `remediationDate` and `remediationId` only while a remediation job is
 * pending. Dates are `yyyy-MM-ddTHH:mm:ss` (UTC). Everything is read with a few statements over
 * all servers (the counts are stored with each collection: status-repository.ts), so that the
 * status of a thousand servers stays cheap.
 */
export type ConfigurationStatus =
  "disabled" | "executing" | "error" | "pendingRemediation" | "drifted" | "current" | "unknown";

/** First wins when aggregating. */
const PRECEDENCE: readonly ConfigurationStatus[] = [
  "disabled",
  "executing",
  "error",
  "pendingRemediation",
  "drifted",
  "current",
  "unknown",
];

export interface StatusObject {
  type: EntityType;
  name: string;
  status: ConfigurationStatus;
  errorText?: string;
  collectionDate: string | null;
  latestCollectionId?: number | null;
  remediationDate?: string;
  remediationId?: number;
}

export interface ItemObject {
  type: string;
  key: string;
  status: string;
  collectionDate: string;
  collectionId: number;
  collectionRole: string | null;
  remediationDate?: string;
  remediationId?: number;
  /** Wharf's addition: what differs (hashes, modes, versions; never content). */
  differences?: readonly unknown[];
  /** Wharf's addition: why an item is unknown. */
  errorText?: string;
}

export interface StatusService {
  /** One entity's status; 404 for an unknown name. */
  statusOf(type: EntityType, name: string): Promise<StatusObject>;
  /** Every server, role and environment, each kind by name. */
  allStatuses(): Promise<StatusObject[]>;
  /** allStatuses as UTF-8 JSON, kept while nothing changed (what the API sends). */
  allStatusesJson(): Promise<Buffer>;
  /** The items of a server's last completed check; 404 for an unknown server. */
  itemsOf(serverName: string): Promise<ItemObject[]>;
  /** The servers whose roles include the role, directly or through dependencies. */
  serversWithRole(roleId: number): Promise<number[]>;
}

export interface StatusDeps {
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Pick<Config, "agentOfflineMs">;
  readonly infrastructure: InfrastructureRepository;
  readonly collections: CollectionsRepository;
  readonly remediations: RemediationRepository;
  /** The database's change version (cacheVersionOf): what was read is kept while nothing was written. Absent: read every time. */
  readonly watch?: CacheVersion | undefined;
}

/** How long a snapshot of every server's facts may be kept at most, even with no write (agents go offline with time). */
const SNAPSHOT_MAX_AGE_MS = 1_000;

/** ISO 8601 without fraction or zone, as the seed and InedoCore's DateTime parsing want. */
export const seedDate = (iso: string) =>
  // Stored dates are toISOString() text already (UTC, Z): cut, without parsing a thousand of them.
  iso.length === 24 && iso.endsWith("Z") && iso[10] === "T"
    ? iso.slice(0, 19)
    : new Date(iso).toISOString().slice(0, 19);

type ServerRow = StatusServerRow;

/** What a server's status is made from; `drifted` may be narrowed to one role's items. */
interface ServerFacts {
  readonly row: ServerRow;
  readonly drifted: number;
  readonly open: readonly OpenRemediation[];
}

export function createStatusService(deps: StatusDeps): StatusService {
  const { clock, config, infrastructure, collections, remediations, watch } = deps;
  const repository = byDatabase<StatusRepository>(deps.db, createStatusRepository, createPostgresStatusRepository);
  let snapshot: { version: string; at: number; loaded: Loaded; allJson: Buffer | undefined } | undefined;

  function serverStatus(facts: ServerFacts): { status: ConfigurationStatus; errorText?: string } {
    const { row } = facts;
    if (row.active === 0) return { status: "disabled" };
    if (row.collection_status === "executing" || facts.open.some((job) => job.status === "executing")) {
      return { status: "executing" };
    }
    if (row.collection_status === "error") return { status: "error", errorText: row.error_text ?? "The check failed." };
    if (row.server_type === "agent" && row.agent_last_seen_at !== null) {
      const since = Date.parse(row.agent_last_seen_at);
      if (clock.now().getTime() - since > config.agentOfflineMs) {
        return {
          status: "error",
          errorText: `The agent has not been heard from since ${seedDate(row.agent_last_seen_at)} (UTC).`,
        };
      }
    }
    if (row.drift_mode === "none" || row.collection_status === null) return { status: "unknown" };
    if (facts.drifted > 0) {
      return { status: facts.open.some((job) => job.status === "pending") ? "pendingRemediation" : "drifted" };
    }
    return { status: "current" };
  }

  /** The first pending job among these (earliest start), for remediationDate/remediationId. */
  function pendingOf(open: readonly OpenRemediation[]): OpenRemediation | undefined {
    let first: OpenRemediation | undefined;
    for (const job of open) {
      if (job.status !== "pending") continue;
      if (first === undefined || job.at < first.at || (job.at === first.at && job.jobId < first.jobId)) first = job;
    }
    return first;
  }

  function withRemediation(object: StatusObject, open: readonly OpenRemediation[]): StatusObject {
    const pending = pendingOf(open);
    if (pending !== undefined) {
      object.remediationDate = seedDate(pending.at);
      object.remediationId = pending.jobId;
    }
    return object;
  }

  function serverObject(row: ServerRow, open: readonly OpenRemediation[]): StatusObject {
    const { status, errorText } = serverStatus({ row, drifted: row.drifted ?? 0, open });
    const object: StatusObject = {
      type: "server",
      name: row.name,
      status,
      ...(errorText !== undefined && { errorText }),
      collectionDate: row.started_at === null ? null : seedDate(row.started_at),
      latestCollectionId: row.collection_id,
    };
    return withRemediation(object, open);
  }

  /** A role's or an environment's status over its servers' facts. */
  function aggregate(type: EntityType, name: string, members: readonly ServerFacts[]): StatusObject {
    const active = members.filter((facts) => facts.row.active === 1);
    let status: ConfigurationStatus = members.length > 0 && active.length === 0 ? "disabled" : "unknown";
    let errorText: string | undefined;
    let oldest: string | undefined;
    const open: OpenRemediation[] = [];
    for (const facts of active) {
      const own = serverStatus(facts);
      if (PRECEDENCE.indexOf(own.status) < PRECEDENCE.indexOf(status)) {
        status = own.status;
        errorText = own.errorText === undefined ? undefined : `${facts.row.name}: ${own.errorText}`;
      }
      const date = facts.row.started_at;
      if (date !== null && (oldest === undefined || date < oldest)) oldest = date;
      open.push(...facts.open);
    }
    const object: StatusObject = {
      type,
      name,
      status,
      ...(status === "error" && errorText !== undefined && { errorText }),
      collectionDate: oldest === undefined ? null : seedDate(oldest),
    };
    return withRemediation(object, open);
  }

  function openByServer(open: readonly OpenRemediation[]): Map<number, OpenRemediation[]> {
    const byServer = new Map<number, OpenRemediation[]>();
    for (const job of open) {
      const list = byServer.get(job.serverId);
      if (list) list.push(job);
      else byServer.set(job.serverId, [job]);
    }
    return byServer;
  }

  /** Server ids by role: the servers that list it, and those that list a role depending on it (at any depth). */
  function membersByRole({ dependencies, serverRoles }: Memberships): Map<number, number[]> {
    const dependsOn = new Map<number, number[]>();
    for (const d of dependencies) {
      const list = dependsOn.get(d.role_id);
      if (list) list.push(d.depends_on_id);
      else dependsOn.set(d.role_id, [d.depends_on_id]);
    }
    const members = new Map<number, Set<number>>();
    const add = (roleId: number, serverId: number, seen: Set<number>) => {
      if (seen.has(roleId)) return; // a cycle slipped in by hand must not loop
      seen.add(roleId);
      let set = members.get(roleId);
      if (set === undefined) members.set(roleId, (set = new Set()));
      set.add(serverId);
      for (const dependency of dependsOn.get(roleId) ?? []) add(dependency, serverId, seen);
    };
    for (const m of serverRoles) add(m.role_id, m.server_id, new Set());
    return new Map([...members].map(([roleId, servers]) => [roleId, [...servers]]));
  }

  /**
   * Everything the objects of every entity need, in a handful of statements; kept while the
   * database has not changed (and at most SNAPSHOT_MAX_AGE_MS, for the agents' offline rule).
   */
  function kept(): { version: string | undefined; at: number; loaded: Loaded | undefined } {
    const version = watch?.version();
    const at = clock.now().getTime();
    const last = snapshot;
    const fresh = last !== undefined && last.version === version && at >= last.at && at - last.at < SNAPSHOT_MAX_AGE_MS;
    return { version, at, loaded: fresh ? last.loaded : undefined };
  }

  function keep(version: string | undefined, at: number, loaded: Loaded): Loaded {
    snapshot = version === undefined ? undefined : { version, at, loaded, allJson: undefined };
    return loaded;
  }

  async function load(): Promise<Loaded> {
    // The version before the read: a write during it makes the next call read again.
    const { version, at, loaded } = kept();
    return loaded ?? keep(version, at, fromFacts(await repository.facts()));
  }

  function fromFacts(facts: StatusFacts) {
    const rows = facts.servers;
    const byId = new Map(rows.map((row) => [row.id, row]));
    const open = openByServer(facts.open);
    const serverOfCollection = new Map<number, number>();
    for (const row of rows) if (row.collection_id !== null) serverOfCollection.set(row.collection_id, row.id);
    const roleDrift = new Map<string, number>();
    for (const r of facts.roleDrift) {
      roleDrift.set(`${serverOfCollection.get(r.collection_id)}:${r.role_id}`, r.drifted);
    }
    const environmentMembers = new Map<number, number[]>();
    for (const m of facts.environmentMembers) {
      const list = environmentMembers.get(m.environment_id);
      if (list) list.push(m.server_id);
      else environmentMembers.set(m.environment_id, [m.server_id]);
    }
    return {
      rows,
      byId,
      open,
      roleDrift,
      roleMembers: membersByRole(facts),
      environmentMembers,
      roles: facts.roles,
      environments: facts.environments,
    };
  }
  type Loaded = ReturnType<typeof fromFacts>;

  function roleObject(loaded: Loaded, role: { id: number; name: string }): StatusObject {
    const members: ServerFacts[] = [];
    for (const serverId of loaded.roleMembers.get(role.id) ?? []) {
      const row = loaded.byId.get(serverId);
      if (row === undefined) continue;
      // Only the jobs that touch the role's items: a whole-server one or one of this role.
      const open = (loaded.open.get(serverId) ?? []).filter(
        (job) => job.roleId === undefined || job.roleId === role.id,
      );
      members.push({ row, drifted: loaded.roleDrift.get(`${serverId}:${role.id}`) ?? 0, open });
    }
    return aggregate("role", role.name, members);
  }

  function environmentObject(loaded: Loaded, environment: { id: number; name: string }): StatusObject {
    const members: ServerFacts[] = [];
    for (const serverId of loaded.environmentMembers.get(environment.id) ?? []) {
      const row = loaded.byId.get(serverId);
      if (row === undefined) continue;
      members.push({ row, drifted: row.drifted ?? 0, open: loaded.open.get(serverId) ?? [] });
    }
    return aggregate("environment", environment.name, members);
  }

  function allOf(loaded: Loaded): StatusObject[] {
    return [
      ...loaded.rows.map((row) => serverObject(row, loaded.open.get(row.id) ?? [])),
      ...loaded.roles.map((role) => roleObject(loaded, role)),
      ...loaded.environments.map((environment) => environmentObject(loaded, environment)),
    ];
  }

  /** The JSON of every status, kept with the snapshot it was made from. */
  function allJsonOf(loaded: Loaded): Buffer {
    const last = snapshot;
    if (last?.loaded === loaded && last.allJson !== undefined) return last.allJson;
    const json = Buffer.from(JSON.stringify(allOf(loaded)));
    if (last?.loaded === loaded) last.allJson = json;
    return json;
  }

  const missing = (type: EntityType, name: string) =>
    notFound("CONFIG_ENTITY_NOT_FOUND", `There is no ${type} named '${name}'.`);

  return {
    serversWithRole: async (roleId) => membersByRole(await repository.memberships()).get(roleId) ?? [],

    async statusOf(type, name) {
      if (type === "server") {
        const ref = await infrastructure.findServer(name);
        const row = ref && (await repository.server(ref.id));
        if (ref === undefined || row === undefined) throw missing(type, name);
        return serverObject(row, await remediations.open(ref.id));
      }
      if (type === "role") {
        const role = await infrastructure.findRole(name);
        if (role === undefined) throw missing(type, name);
        return roleObject(await load(), role);
      }
      if (type === "environment") {
        const environment = await infrastructure.findEnvironment(name);
        if (environment === undefined) throw missing(type, name);
        return environmentObject(await load(), environment);
      }
      throw invalid("INVALID_ENTITY_TYPE", `'${String(type)}' is not an entity type: use server, role or environment.`);
    },

    allStatuses: async () => allOf(await load()),
    allStatusesJson: async () => allJsonOf(await load()),

    async itemsOf(serverName) {
      const server = await infrastructure.findServer(serverName);
      if (server === undefined) throw missing("server", serverName);
      const collection = await collections.latestCompletedOf(server.id);
      if (collection === undefined) return [];
      const pending = (await remediations.open(server.id)).filter((job) => job.status === "pending");
      const collectionDate = seedDate(collection.startedAt);
      return (await collections.items(collection.id)).map((item) => {
        const object: ItemObject = {
          type: item.type,
          key: item.key,
          status: item.status,
          collectionDate,
          collectionId: collection.id,
          collectionRole: item.roleName ?? null,
        };
        const job = pendingOf(pending.filter((p) => p.roleId === undefined || p.roleId === item.roleId));
        if (job !== undefined) {
          object.remediationDate = seedDate(job.at);
          object.remediationId = job.jobId;
        }
        if (item.differences.length > 0) object.differences = item.differences;
        if (item.errorText !== undefined) object.errorText = item.errorText;
        return object;
      });
    },
  };
}
