import { randomUUID } from "node:crypto";
import type { WorkItem, WorkKind, WorkResult } from "../../agent/protocol.js";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { conflict, invalid, notFound } from "../../domain/errors.js";
import type { DesiredItem, ItemResult } from "../../drift/model.js";
import type { AgentRepository, AgentServerRow } from "./agent-repository.js";
import type { WorkPackage } from "./agent-hub.js";
import type { ServerTarget, ServerTransport, TransportRun } from "./transport.js";

/**
 * What both agent hubs (agent-hub-memory.ts on one machine, agent-hub-cluster.ts in a cluster)
 * decide alike: when an agent counts as seen and offline, why work is refused, when it lapses, how
 * a result is read, and how held polls learn of a revoked key. agent-hub.ts states the rules.
 */
export type HubConfig = Pick<Config, "agentLeaseMs" | "agentOfflineMs">;

/** Hands work to the server's agent and resolves with what it reported (each hub's own queue). */
export type Dispatch = (
  server: ServerTarget,
  kind: WorkKind,
  items: readonly DesiredItem[],
  run: TransportRun,
  simulate: boolean,
) => Promise<WorkResult>;

/** Why work cannot be dispatched now (the run aborted, Wharf closing); undefined when it can. */
export function dispatchRefusal(run: TransportRun, closed: boolean): Error | undefined {
  if (run.signal.aborted) return run.signal.reason as Error;
  if (closed) return new Error("Wharf is shutting down.");
  return undefined;
}

/** The item of work an agent is handed: a new id, what to check or change, and the lease it must answer within. */
export function newWorkItem(
  kind: WorkKind,
  items: readonly DesiredItem[],
  run: TransportRun,
  simulate: boolean,
  leaseSeconds: number,
): WorkItem {
  return { id: randomUUID(), kind, simulate, items, variables: Object.fromEntries(run.variables), leaseSeconds };
}

/** Configuration management's transport for agent servers: checks and remediations as work for the agent. */
export function transportThrough(dispatch: Dispatch): ServerTransport {
  return {
    async check(server, items, run) {
      return (await dispatch(server, "check", items, run, false)).results as ItemResult[];
    },
    async remediate(server, items, run) {
      const { changes, results } = await dispatch(server, "remediate", items, run, run.simulate);
      return { changes, results };
    },
  };
}

/**
 * agent_last_seen_at is written at most this often per server (a quarter of the offline time when
 * that is shorter), also while a poll is held: the status reads it to call a silent agent offline.
 */
const SEEN_WRITE_INTERVAL_MS = 5000;

/**
 * How often held polls are looked at (a quarter of the offline time when that is shorter): their
 * agents are recorded as seen, and a poll whose key is no longer its server's ends (a revoked
 * agent is told within this time, not after its poll).
 */
const SWEEP_MS = 2000;

export const sweepEveryMs = (config: HubConfig) => Math.min(SWEEP_MS, config.agentOfflineMs / 4);

export const leaseSecondsOf = (config: HubConfig) => Math.max(1, Math.round(config.agentLeaseMs / 1000));

/** `yyyy-MM-ddTHH:mm:ss` UTC, as the configuration API writes dates. */
function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)} UTC`;
}

/** The error a work item ends with when its agent gave no sign of life about it within the lease. */
export function leaseLapsed(serverName: string, kind: WorkKind, leaseSeconds: number): Error {
  const what = kind === "check" ? "the check" : "the remediation";
  return new Error(
    `The agent of server ${serverName} did not finish ${what} within ${leaseSeconds} s of its last sign of life ` +
      "(WHARF_AGENT_LEASE_SECONDS): it stopped or lost its connection.",
  );
}

/** The error work ends with when the agent reports it could not be done at all. */
export const agentFailed = (serverName: string, error: string) =>
  new Error(`The agent of server ${serverName}: ${error}`);

export interface Presence {
  /** Records a sign of life of the server's agent; writes it (throttled) for the status and other nodes. */
  seen(server: AgentServerRow, version: string | undefined): void;
  /** When this process last saw the server's agent (0: never). */
  lastSeenMs(serverId: number): number;
}

/** `onSeen` runs on every sign of life (the memory hub renews the leases of queued work there). */
export function createPresence(
  repository: AgentRepository,
  clock: Clock,
  config: HubConfig,
  onSeen: (serverId: number, nowMs: number) => void,
): Presence {
  const entries = new Map<number, { lastSeenMs: number; writtenMs: number; version: string | undefined }>();
  const writeEveryMs = Math.min(SEEN_WRITE_INTERVAL_MS, config.agentOfflineMs / 4);
  return {
    seen(server, version) {
      const now = clock.now().getTime();
      const entry = entries.get(server.id) ?? { lastSeenMs: 0, writtenMs: 0, version: undefined };
      entries.set(server.id, entry);
      entry.lastSeenMs = now;
      onSeen(server.id, now);
      const versionChanged = version !== undefined && version !== entry.version;
      if (now - entry.writtenMs < writeEveryMs && !versionChanged) return;
      entry.writtenMs = now;
      if (version !== undefined) entry.version = version;
      // On SQLite the statement runs now, synchronously; a write that failed is made at the next sign of life.
      repository.recordSeen(server.id, new Date(now).toISOString(), version).catch(() => {
        if (entry.writtenMs === now) {
          entry.writtenMs = 0;
          if (versionChanged) entry.version = undefined;
        }
      });
    },
    lastSeenMs: (serverId) => entries.get(serverId)?.lastSeenMs ?? 0,
  };
}

/**
 * Why work for this server cannot be handed to its agent now; undefined when it can. `polling`:
 * this process holds the agent's poll; else the agent counts as seen when this process or (through
 * agent_last_seen_at, written by whichever node it talks to) any node saw it within the offline time.
 */
export function unavailable(
  target: ServerTarget,
  server: AgentServerRow | undefined,
  seen: { readonly polling: boolean; readonly lastSeenMs: number; readonly nowMs: number },
  config: HubConfig,
): string | undefined {
  if (server === undefined) return `Server ${target.name} is not an agent server (any more).`;
  if (!server.hasKey) {
    return `Server ${server.name} has no agent key (revoked or never issued): issue one with POST /api/infrastructure/servers/agent-key/${server.name} and give it to its agent.`;
  }
  if (!server.active) return `Server ${server.name} is inactive: its agent gets no work.`;
  if (seen.polling) return undefined;
  const recorded = server.lastSeenAt === undefined ? 0 : Date.parse(server.lastSeenAt);
  const lastSeen = Math.max(seen.lastSeenMs, recorded);
  if (lastSeen === 0) return `The agent of server ${server.name} has never connected to Wharf.`;
  if (seen.nowMs - lastSeen > config.agentOfflineMs) {
    return `The agent of server ${server.name} has not been seen since ${formatUtc(lastSeen)}.`;
  }
  return undefined;
}

const itemId = (type: string, key: string) => `${type}\u0000${key}`;

/** The results in the order of the work's items, an item the agent did not report as unknown. */
export function resultsInOrder(work: WorkItem, results: readonly ItemResult[]): ItemResult[] {
  const byItem = new Map<string, ItemResult>();
  const expected = new Set(work.items.map((item) => itemId(item.type, item.key)));
  for (const [index, result] of results.entries()) {
    const id = itemId(result.type, result.key);
    if (!expected.has(id)) {
      throw invalid("AGENT_RESULT_INVALID", `results[${index}]: the work has no ${result.type} item '${result.key}'.`);
    }
    if (byItem.has(id)) {
      throw invalid("AGENT_RESULT_INVALID", `results[${index}]: a second result for ${result.type} '${result.key}'.`);
    }
    byItem.set(id, result);
  }
  return work.items.map((item) => {
    const found = byItem.get(itemId(item.type, item.key));
    if (found === undefined) {
      return {
        type: item.type,
        key: item.key,
        role: item.role,
        status: "unknown",
        differences: [],
        error: "The agent reported no result for this item.",
      };
    }
    // The role is Wharf's to say, not the agent's.
    return { ...found, role: item.role };
  });
}

/** A held poll: called once with the work handed to it, [] (nothing came) or "revoked". */
export type Waiter = ((work: WorkItem[] | "revoked") => void) & {
  readonly server: AgentServerRow;
  readonly version: string | undefined;
};

/**
 * Looks at the held polls every `sweepEveryMs` while there are some: a poll whose key is no longer
 * its server's (revoked or replaced, on any node) is answered "revoked"; the others' agents are seen.
 * `extra` runs at each look too (the cluster hub looks for work it may not have been told of).
 */
export function createPollSweep(
  waiters: Map<number, Waiter>,
  repository: AgentRepository,
  presence: Presence,
  config: HubConfig,
  extra?: () => Promise<void>,
): { ensure(): void; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let sweeping = false;
  async function sweep(): Promise<void> {
    if (sweeping) return;
    sweeping = true;
    try {
      for (const [serverId, waiter] of [...waiters]) {
        const current = await repository.get(serverId);
        // Answered meanwhile: nothing to end (a new poll of the server is looked at next time).
        if (waiters.get(serverId) !== waiter) continue;
        if (current?.keyHash !== waiter.server.keyHash) waiter("revoked");
        else presence.seen(waiter.server, waiter.version);
      }
      await extra?.();
    } catch {
      // The database could not be read: the held polls are looked at again at the next sweep.
    } finally {
      sweeping = false;
    }
    if (waiters.size === 0) stop();
  }
  function stop(): void {
    clearInterval(timer);
    timer = undefined;
  }
  return {
    ensure() {
      if (timer !== undefined) return;
      timer = setInterval(() => void sweep(), sweepEveryMs(config));
      timer.unref();
    },
    stop,
  };
}

export function workNotFound(workId: string): Error {
  return notFound(
    "AGENT_WORK_NOT_FOUND",
    `No work ${workId} of this agent is waiting for a result (it was finished or canceled, or its lease ran out).`,
  );
}

export function alreadyConnected(server: AgentServerRow): Error {
  return conflict(
    "AGENT_ALREADY_CONNECTED",
    `Another agent is already connected with the key of server ${server.name}: run one agent per server (each server has its own key).`,
  );
}

/** The package item `itemKey` of the work; not found for any other. */
export function packageOf(item: WorkItem, workId: string, itemKey: string): WorkPackage {
  const found = item.items.find((candidate) => candidate.type === "package" && candidate.key === itemKey);
  const { feed, group, name, version } = found?.properties ?? {};
  if (typeof feed !== "string" || typeof name !== "string" || typeof version !== "string") {
    throw notFound("AGENT_PACKAGE_NOT_IN_WORK", `Work ${workId} has no package item '${itemKey}'.`);
  }
  return { feed, group: typeof group === "string" ? group : "", name, version };
}
