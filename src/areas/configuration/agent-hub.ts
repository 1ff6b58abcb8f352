import { randomUUID } from "node:crypto";
import { hashApiKey } from "../security/api-key-hash.js";
import type { LogLine, WorkItem, WorkKind, WorkResult } from "../../agent/protocol.js";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { conflict, invalid, notFound } from "../../domain/errors.js";
import type { DesiredItem, ItemResult } from "../../drift/model.js";
import { byDatabase, isPostgres, type MetadataDb } from "../../storage/metadata-db.js";
import {
  type AgentRepository,
  type AgentServerRow,
  createAgentRepository,
  type SqliteAgentRepository,
} from "./agent-repository.js";
import { createPostgresAgentRepository } from "./agent-repository-postgres.js";
import type { ServerTarget, ServerTransport, TransportRun } from "./transport.js";

/**
 * The in-memory side of the agent protocol (issue 13 section 3): work for `agent` servers waits
 * here until the server's agent long-polls for it, and the check or remediation that queued it
 * waits for the agent's result. One Wharf process holds it; nothing of it survives a restart
 * (the checker ends executing collections found at start, the job runner retries its jobs).
 *
 * Rules:
 * - One poll per server at a time: a second connection with the same key while one is held is
 *   refused (409 AGENT_ALREADY_CONNECTED), so two agents started with one key take no work twice
 *   and the one holding its poll keeps the server (the other retries with backoff).
 * - An agent not seen for `agentOfflineMs` (no poll held, none within that time) gets no work:
 *   the check fails at once with "has not been seen since <date>".
 * - Work not finished within `agentLeaseMs` of the agent's last sign of life about it (handed out,
 *   a log post, a package download) fails: the agent died or lost its connection. Work not handed
 *   out yet (the agent is busy with other work, one item at a time) lives as long as the agent does.
 * - A revoked key finds no server (403); an inactive server's work is refused at once.
 *
 * Cluster mode (PostgreSQL): the queue is this node's, so work is handed only to an agent whose
 * poll this node holds or has heard within the offline time; work for an agent connected to another
 * node is refused, saying so (routing work between nodes is not built yet).
 */
export interface AgentHubDeps {
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Pick<Config, "agentLeaseMs" | "agentOfflineMs">;
}

/** The server an agent key belongs to, as the protocol's routes see it. */
export type AgentServer = AgentServerRow;

/** A package item of a work item, which the agent may resolve and download (and no other package). */
export interface WorkPackage {
  readonly feed: string;
  /** "" for no group. */
  readonly group: string;
  readonly name: string;
  /** Exact, or `latest`. */
  readonly version: string;
}

export interface AgentHub {
  /** The ServerTransport for `agent` servers: hands the items to the server's agent and waits for its result. */
  readonly transport: ServerTransport;
  /** The agent server whose current key this is; undefined for an unknown or revoked key. */
  identify(key: string): Promise<AgentServer | undefined>;
  /** Records a sign of life of the server's agent (servers.agent_last_seen_at, agent_version), at most every few seconds. */
  seen(server: AgentServer, version: string | undefined): void;
  /**
   * The work queued for the server, at once if there is some, else whatever comes within `waitMs`
   * (empty when nothing did, or `signal` aborted); `revoked` when the key was revoked or replaced
   * while the poll was held. Throws conflict while another poll of the server is held.
   */
  poll(
    server: AgentServer,
    options: { waitMs: number; version: string | undefined; signal: AbortSignal },
  ): Promise<WorkItem[] | "revoked">;
  /** Forwards log lines to the job or check waiting for the work, and renews its lease (no lines: a heartbeat). */
  log(server: AgentServer, workId: string, lines: readonly LogLine[]): void;
  /** The agent's result: settles the check or remediation waiting for it. */
  complete(server: AgentServer, workId: string, result: WorkResult): void;
  /** The package item `itemKey` of the work, renewing its lease; throws not found for any other. */
  workPackage(server: AgentServer, workId: string, itemKey: string): WorkPackage;
  /** Whether the server's agent holds a poll right now. */
  isPolling(serverId: number): boolean;
  /** Answers every held poll (empty) and fails every waiting work item: called when Wharf closes. */
  close(): void;
}

/**
 * agent_last_seen_at is written at most this often per server (a quarter of the offline time when
 * that is shorter), also while a poll is held: the status reads it to call a silent agent offline.
 */
const SEEN_WRITE_INTERVAL_MS = 5000;

interface Presence {
  lastSeenMs: number;
  writtenMs: number;
  version: string | undefined;
}

interface Work {
  readonly item: WorkItem;
  readonly serverId: number;
  readonly serverName: string;
  readonly run: TransportRun;
  handedOut: boolean;
  timer: NodeJS.Timeout | undefined;
  settle(outcome: { readonly result: WorkResult } | { readonly error: unknown }): void;
}

type Waiter = ((work: WorkItem[] | "revoked") => void) & {
  readonly server: AgentServer;
  readonly version: string | undefined;
};

/**
 * How often held polls are looked at (a quarter of the offline time when that is shorter): their
 * agents are recorded as seen, and a poll whose key is no longer its server's ends (a revoked
 * agent is told within this time, not after its poll).
 */
const SWEEP_MS = 2000;

/** `yyyy-MM-ddTHH:mm:ss` UTC, as the configuration API writes dates. */
function formatUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)} UTC`;
}

const itemId = (type: string, key: string) => `${type}\u0000${key}`;

export function createAgentHub(deps: AgentHubDeps): AgentHub {
  const { clock, config } = deps;
  const repository = byDatabase<AgentRepository & Partial<Pick<SqliteAgentRepository, "getNow">>>(
    deps.db,
    createAgentRepository,
    createPostgresAgentRepository,
  );
  const cluster = isPostgres(deps.db);
  const presence = new Map<number, Presence>();
  const waiters = new Map<number, Waiter>();
  const queued = new Map<number, Work[]>();
  const works = new Map<string, Work>();
  const leaseSeconds = Math.max(1, Math.round(config.agentLeaseMs / 1000));
  let closed = false;
  let sweep: NodeJS.Timeout | undefined;
  let sweeping = false;

  const writeEveryMs = Math.min(SEEN_WRITE_INTERVAL_MS, config.agentOfflineMs / 4);
  const sweepEveryMs = Math.min(SWEEP_MS, config.agentOfflineMs / 4);

  async function sweepPolls(): Promise<void> {
    if (sweeping) return;
    sweeping = true;
    try {
      for (const [serverId, waiter] of [...waiters]) {
        const current = await repository.get(serverId);
        // Answered meanwhile: nothing to end (a new poll of the server is looked at next time).
        if (waiters.get(serverId) !== waiter) continue;
        if (current?.keyHash !== waiter.server.keyHash) waiter("revoked");
        else seen(waiter.server, waiter.version);
      }
    } catch {
      // The database could not be read: the held polls are looked at again at the next sweep.
    } finally {
      sweeping = false;
    }
    if (waiters.size === 0) {
      clearInterval(sweep);
      sweep = undefined;
    }
  }

  function seen(server: AgentServer, version: string | undefined): void {
    const now = clock.now().getTime();
    const entry = presence.get(server.id) ?? { lastSeenMs: 0, writtenMs: 0, version: undefined };
    presence.set(server.id, entry);
    entry.lastSeenMs = now;
    // Work waiting for the agent to finish other work first is not lost while the agent lives.
    for (const work of queued.get(server.id) ?? []) renewLease(work);
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
  }

  /** Why work for this server cannot be handed to its agent now; undefined when it can. */
  function unavailable(target: ServerTarget, server: AgentServerRow | undefined): string | undefined {
    if (server === undefined) return `Server ${target.name} is not an agent server (any more).`;
    if (!server.hasKey) {
      return `Server ${server.name} has no agent key (revoked or never issued): issue one with POST /api/infrastructure/servers/agent-key/${server.name} and give it to its agent.`;
    }
    if (!server.active) return `Server ${server.name} is inactive: its agent gets no work.`;
    if (waiters.has(server.id)) return undefined;
    const now = clock.now().getTime();
    const recorded = server.lastSeenAt === undefined ? undefined : Date.parse(server.lastSeenAt);
    const lastSeen = Math.max(presence.get(server.id)?.lastSeenMs ?? 0, recorded ?? 0);
    if (lastSeen === 0) return `The agent of server ${server.name} has never connected to Wharf.`;
    if (now - lastSeen > config.agentOfflineMs) {
      return `The agent of server ${server.name} has not been seen since ${formatUtc(lastSeen)}.`;
    }
    const here = presence.get(server.id)?.lastSeenMs ?? 0;
    if (cluster && now - here > config.agentOfflineMs) {
      return (
        `The agent of server ${server.name} has not polled this Wharf node lately (it may poll another one): ` +
        "not available in cluster mode yet: handing work to an agent polling another node."
      );
    }
    return undefined;
  }

  function renewLease(work: Work): void {
    clearTimeout(work.timer);
    work.timer = setTimeout(() => {
      const what = work.item.kind === "check" ? "the check" : "the remediation";
      work.settle({
        error: new Error(
          `The agent of server ${work.serverName} did not finish ${what} within ${leaseSeconds} s of its last sign of life ` +
            "(WHARF_AGENT_LEASE_SECONDS): it stopped or lost its connection.",
        ),
      });
    }, config.agentLeaseMs);
    work.timer.unref();
  }

  /** Hands the server's queued work to its held poll, if there is one. */
  function handOut(serverId: number): void {
    const waiter = waiters.get(serverId);
    const list = queued.get(serverId);
    if (waiter === undefined || list === undefined || list.length === 0) return;
    waiters.delete(serverId);
    waiter(takeQueued(serverId));
  }

  function takeQueued(serverId: number): WorkItem[] {
    const list = queued.get(serverId) ?? [];
    queued.delete(serverId);
    for (const work of list) {
      work.handedOut = true;
      renewLease(work);
    }
    return list.map((work) => work.item);
  }

  async function dispatch(
    server: ServerTarget,
    kind: WorkKind,
    items: readonly DesiredItem[],
    run: TransportRun,
    simulate: boolean,
  ): Promise<WorkResult> {
    const refused = () => {
      if (run.signal.aborted) return run.signal.reason as Error;
      if (closed) return new Error("Wharf is shutting down.");
      return undefined;
    };
    const before = refused();
    if (before !== undefined) throw before;
    // On SQLite read at once: the work is queued within this call, as before cluster mode.
    const row = repository.getNow !== undefined ? repository.getNow(server.id) : await repository.get(server.id);
    const reason = unavailable(server, row);
    if (reason !== undefined) throw new Error(reason);
    return new Promise<WorkResult>((resolve, reject) => {
      // Aborted or closing while the server was read.
      const after = refused();
      if (after !== undefined) return reject(after);
      const item: WorkItem = {
        id: randomUUID(),
        kind,
        simulate,
        items,
        variables: Object.fromEntries(run.variables),
        leaseSeconds,
      };
      const onAbort = () => work.settle({ error: run.signal.reason });
      const work: Work = {
        item,
        serverId: server.id,
        serverName: server.name,
        run,
        handedOut: false,
        timer: undefined,
        settle(outcome) {
          if (!works.delete(item.id)) return;
          clearTimeout(work.timer);
          run.signal.removeEventListener("abort", onAbort);
          const list = queued.get(server.id);
          const index = list?.indexOf(work) ?? -1;
          if (list !== undefined && index >= 0) list.splice(index, 1);
          if ("result" in outcome) resolve(outcome.result);
          else reject(outcome.error as Error);
        },
      };
      run.signal.addEventListener("abort", onAbort, { once: true });
      works.set(item.id, work);
      queued.set(server.id, [...(queued.get(server.id) ?? []), work]);
      renewLease(work);
      handOut(server.id);
    });
  }

  function workOf(server: AgentServer, workId: string): Work {
    const work = works.get(workId);
    if (work === undefined || work.serverId !== server.id || !work.handedOut) {
      throw notFound(
        "AGENT_WORK_NOT_FOUND",
        `No work ${workId} of this agent is waiting for a result (it was finished or canceled, or its lease ran out).`,
      );
    }
    return work;
  }

  /** The results in the order of the work's items, an item the agent did not report as unknown. */
  function resultsInOrder(work: Work, results: readonly ItemResult[]): ItemResult[] {
    const byItem = new Map<string, ItemResult>();
    const expected = new Set(work.item.items.map((item) => itemId(item.type, item.key)));
    for (const [index, result] of results.entries()) {
      const id = itemId(result.type, result.key);
      if (!expected.has(id)) {
        throw invalid(
          "AGENT_RESULT_INVALID",
          `results[${index}]: the work has no ${result.type} item '${result.key}'.`,
        );
      }
      if (byItem.has(id)) {
        throw invalid("AGENT_RESULT_INVALID", `results[${index}]: a second result for ${result.type} '${result.key}'.`);
      }
      byItem.set(id, result);
    }
    return work.item.items.map((item) => {
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

  return {
    transport: {
      async check(server, items, run) {
        return (await dispatch(server, "check", items, run, false)).results as ItemResult[];
      },
      async remediate(server, items, run) {
        const { changes, results } = await dispatch(server, "remediate", items, run, run.simulate);
        return { changes, results };
      },
    },

    identify: async (key) => (key === "" ? undefined : repository.findByKeyHash(hashApiKey(key))),

    seen,

    async poll(server, { waitMs, version, signal }) {
      if (waiters.has(server.id)) {
        throw conflict(
          "AGENT_ALREADY_CONNECTED",
          `Another agent is already connected with the key of server ${server.name}: run one agent per server (each server has its own key).`,
        );
      }
      seen(server, version);
      const ready = server.active ? takeQueued(server.id) : [];
      if (ready.length > 0 || waitMs <= 0 || closed) return ready;
      try {
        return await new Promise<WorkItem[] | "revoked">((resolve) => {
          const done: Waiter = Object.assign(
            (work: WorkItem[] | "revoked") => {
              clearTimeout(timer);
              signal.removeEventListener("abort", onAbort);
              if (waiters.get(server.id) === done) waiters.delete(server.id);
              resolve(work);
            },
            { server, version },
          );
          const onAbort = () => done([]);
          const timer = setTimeout(() => done([]), waitMs);
          signal.addEventListener("abort", onAbort, { once: true });
          waiters.set(server.id, done);
          if (sweep === undefined) {
            sweep = setInterval(() => void sweepPolls(), sweepEveryMs);
            sweep.unref();
          }
        });
      } finally {
        seen(server, version);
      }
    },

    log(server, workId, lines) {
      const work = workOf(server, workId);
      renewLease(work);
      for (const line of lines) work.run.log(line.level, line.message);
    },

    complete(server, workId, result) {
      const work = workOf(server, workId);
      if (result.error !== undefined) {
        work.settle({ error: new Error(`The agent of server ${work.serverName}: ${result.error}`) });
        return;
      }
      const results = resultsInOrder(work, result.results);
      work.settle({ result: { results, changes: result.changes } });
    },

    workPackage(server, workId, itemKey) {
      const work = workOf(server, workId);
      const item = work.item.items.find((candidate) => candidate.type === "package" && candidate.key === itemKey);
      const { feed, group, name, version } = item?.properties ?? {};
      if (typeof feed !== "string" || typeof name !== "string" || typeof version !== "string") {
        throw notFound("AGENT_PACKAGE_NOT_IN_WORK", `Work ${workId} has no package item '${itemKey}'.`);
      }
      renewLease(work);
      return { feed, group: typeof group === "string" ? group : "", name, version };
    },

    isPolling: (serverId) => waiters.has(serverId),

    close() {
      closed = true;
      clearInterval(sweep);
      for (const waiter of [...waiters.values()]) waiter([]);
      for (const work of [...works.values()]) work.settle({ error: new Error("Wharf is shutting down.") });
    },
  };
}
