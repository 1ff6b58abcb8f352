import type { WorkItem, WorkKind, WorkResult } from "../../agent/protocol.js";
import type { Clock } from "../../domain/clock.js";
import type { DesiredItem } from "../../drift/model.js";
import type { Db } from "../../storage/database.js";
import { hashApiKey } from "../security/api-key-hash.js";
import type { AgentHub, AgentServer } from "./agent-hub.js";
import {
  agentFailed,
  alreadyConnected,
  createPollSweep,
  createPresence,
  dispatchRefusal,
  type HubConfig,
  leaseLapsed,
  leaseSecondsOf,
  newWorkItem,
  packageOf,
  resultsInOrder,
  unavailable,
  type Waiter,
  workNotFound,
  transportThrough,
} from "./agent-hub-rules.js";
import { createAgentRepository } from "./agent-repository.js";
import type { ServerTarget, TransportRun } from "./transport.js";

/**
 * The agent hub of one machine (SQLite): the queue is this process's memory, and each work item's
 * lease a timer. Nothing of it survives a restart (the checker ends executing collections found
 * at start, the job runner retries its jobs). The rules are agent-hub.ts's.
 */
interface Work {
  readonly item: WorkItem;
  readonly serverId: number;
  readonly serverName: string;
  readonly run: TransportRun;
  handedOut: boolean;
  timer: NodeJS.Timeout | undefined;
  settle(outcome: { readonly result: WorkResult } | { readonly error: unknown }): void;
}

export function createMemoryAgentHub(deps: { db: Db; clock: Clock; config: HubConfig }): AgentHub {
  const { clock, config } = deps;
  const repository = createAgentRepository(deps.db);
  const waiters = new Map<number, Waiter>();
  const queued = new Map<number, Work[]>();
  const works = new Map<string, Work>();
  const leaseSeconds = leaseSecondsOf(config);
  let closed = false;

  // Work waiting for the agent to finish other work first is not lost while the agent lives.
  const presence = createPresence(repository, clock, config, (serverId) => {
    for (const work of queued.get(serverId) ?? []) renewLease(work);
  });
  const sweep = createPollSweep(waiters, repository, presence, config);

  function renewLease(work: Work): void {
    clearTimeout(work.timer);
    work.timer = setTimeout(() => {
      work.settle({ error: leaseLapsed(work.serverName, work.item.kind, leaseSeconds) });
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

  function dispatch(
    server: ServerTarget,
    kind: WorkKind,
    items: readonly DesiredItem[],
    run: TransportRun,
    simulate: boolean,
  ): Promise<WorkResult> {
    const refused = dispatchRefusal(run, closed);
    if (refused !== undefined) return Promise.reject(refused);
    // Read at once: the work is queued within this call.
    const reason = unavailable(
      server,
      repository.getNow(server.id),
      { polling: waiters.has(server.id), lastSeenMs: presence.lastSeenMs(server.id), nowMs: clock.now().getTime() },
      config,
    );
    if (reason !== undefined) return Promise.reject(new Error(reason));
    return new Promise<WorkResult>((resolve, reject) => {
      const item = newWorkItem(kind, items, run, simulate, leaseSeconds);
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
    if (work === undefined || work.serverId !== server.id || !work.handedOut) throw workNotFound(workId);
    return work;
  }

  return {
    transport: transportThrough(dispatch),

    identify: async (key) => (key === "" ? undefined : repository.findByKeyHash(hashApiKey(key))),

    seen: presence.seen,

    async poll(server, { waitMs, version, signal }) {
      if (waiters.has(server.id)) throw alreadyConnected(server);
      presence.seen(server, version);
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
          sweep.ensure();
        });
      } finally {
        presence.seen(server, version);
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
        work.settle({ error: agentFailed(work.serverName, result.error) });
        return;
      }
      const results = resultsInOrder(work.item, result.results);
      work.settle({ result: { results, changes: result.changes } });
    },

    workPackage(server, workId, itemKey) {
      const work = workOf(server, workId);
      const found = packageOf(work.item, workId, itemKey);
      renewLease(work);
      return found;
    },

    isPolling: (serverId) => waiters.has(serverId),

    close() {
      closed = true;
      sweep.stop();
      for (const waiter of [...waiters.values()]) waiter([]);
      for (const work of [...works.values()]) work.settle({ error: new Error("Wharf is shutting down.") });
    },
  };
}
