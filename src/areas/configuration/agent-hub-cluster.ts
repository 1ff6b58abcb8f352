import { randomUUID } from "node:crypto";
import type { WorkItem, WorkKind, WorkResult } from "../../agent/protocol.js";
import type { Clock } from "../../domain/clock.js";
import type { DesiredItem } from "../../drift/model.js";
import { defaultNodeId } from "../../storage/postgres/cluster-nodes.js";
import type { PostgresDb } from "../../storage/postgres/database.js";
import type { SecretBox } from "../../storage/secrets.js";
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
  sweepEveryMs,
  unavailable,
  type Waiter,
  workNotFound,
  transportThrough,
} from "./agent-hub-rules.js";
import { createPostgresAgentPollHolds } from "./agent-poll-holds-postgres.js";
import { createPostgresAgentRepository } from "./agent-repository-postgres.js";
import {
  type AgentWorkOutcome,
  type AgentWorkProgress,
  createPostgresAgentWorkRepository,
} from "./agent-work-repository-postgres.js";
import type { ServerTarget, TransportRun } from "./transport.js";

/**
 * The agent hub of a cluster node (PostgreSQL; rules in agent-hub-rules.ts). The queue is the table
 * `agent_work` (migrations/postgres/0009-agent-work.sql): the node running a check or remediation
 * inserts the work and waits; the node holding the agent's poll claims it (woken by the change
 * feed, or by its own insert); whichever node the agent posts its log, result or download to
 * writes to or reads the row; the dispatching node, woken by the change feed, forwards the log
 * lines, takes the result, or ends work whose lease lapsed (on the database's clock), and deletes
 * the row. Each node also looks every few seconds, so that a notification lost while its change
 * feed reconnected delays work, never loses it. A dispatching node that dies stops renewing its
 * rows' `wanted_until`: they are handed to no agent and any node deletes them.
 *
 * One poll per server across the nodes: a poll takes the server's row of `agent_polls`
 * (agent-poll-holds-postgres.ts) before it is held, and is refused while another poll's hold is
 * live; the node renews its holds at each sweep and deletes each when its poll ends.
 */
export interface ClusterAgentHubDeps {
  readonly db: PostgresDb;
  readonly clock: Clock;
  readonly config: HubConfig;
  readonly secrets: SecretBox;
  readonly onChange?: (listener: (table: string) => void) => () => void;
  /** Recorded with the polls this node holds. Default: an id of its own (a process that is no cluster node). */
  readonly nodeId?: string;
}

const SEAL_PURPOSE = "agent-work";

/** How long a dispatching node's rows stay wanted without its renewal (it renews every few seconds). */
const WANTED_SECONDS = 30;

/** How often a node renews the queued work of an agent it sees (a quarter of the lease when that is shorter). */
const RENEW_QUEUED_MS = 5000;

/**
 * How long a poll's hold on its server lasts without renewal. Its node renews it at every sweep
 * (at most 2 s apart), so only a node that died or lost the database lets it lapse; until then an
 * agent that reconnects to another node is refused, and retries with backoff.
 */
const POLL_HOLD_SECONDS = 15;

/** How often abandoned rows (their node died) are deleted, at most. */
const REMOVE_ABANDONED_EVERY_MS = 60_000;

interface Dispatched {
  readonly item: WorkItem;
  readonly serverName: string;
  readonly run: TransportRun;
  /** Whether its row is in: only then can a missing row mean it was deleted. */
  inserted: boolean;
  settle(outcome: { readonly result: WorkResult } | { readonly error: unknown }): void;
}

/** A held poll, which the node wakes when work may have come for it; `pollId` names its hold. */
type HeldPoll = Waiter & { readonly pollId: string; wake(): void };

export function createClusterAgentHub(deps: ClusterAgentHubDeps): AgentHub {
  const { clock, config, secrets } = deps;
  const repository = createPostgresAgentRepository(deps.db);
  const work = createPostgresAgentWorkRepository(deps.db);
  const holds = createPostgresAgentPollHolds(deps.db);
  const nodeId = deps.nodeId ?? defaultNodeId();
  const leaseSeconds = leaseSecondsOf(config);
  const waiters = new Map<number, HeldPoll>();
  const dispatched = new Map<string, Dispatched>();
  const queuedRenewedAt = new Map<number, number>();
  const renewQueuedEveryMs = Math.min(RENEW_QUEUED_MS, config.agentLeaseMs / 4);
  let closed = false;
  let watch: NodeJS.Timeout | undefined;
  let looking = false;
  let lookAgain = false;
  let abandonedRemovedAt = 0;

  // Queued work waits while its agent does other work: any node that sees the agent renews its lease.
  const presence = createPresence(repository, clock, config, (serverId, nowMs) => {
    if (nowMs - (queuedRenewedAt.get(serverId) ?? 0) < renewQueuedEveryMs) return;
    queuedRenewedAt.set(serverId, nowMs);
    work.renewQueued(serverId, leaseSeconds).catch(() => queuedRenewedAt.delete(serverId));
  });
  const sweep = createPollSweep(waiters, repository, presence, config, async () => {
    wakePolls();
    await renewHolds();
  });
  const unsubscribe = deps.onChange?.((table) => {
    if (table !== "agent_work") return;
    wakePolls();
    if (dispatched.size > 0) void look();
  });

  function wakePolls(): void {
    for (const poll of waiters.values()) poll.wake();
  }

  /** Keeps the held polls' holds; a poll whose hold was taken over (it lapsed) ends, as a second poll would be refused. */
  async function renewHolds(): Promise<void> {
    const polls = [...waiters.values()];
    const kept = await holds.renew(
      polls.map((poll) => [poll.server.id, poll.pollId] as const),
      POLL_HOLD_SECONDS,
    );
    for (const poll of polls) if (!kept.has(poll.server.id)) poll([]);
  }

  const seal = (item: WorkItem) => secrets.seal(JSON.stringify(item), SEAL_PURPOSE);
  const open = (sealed: string) => JSON.parse(secrets.open(sealed, SEAL_PURPOSE)) as WorkItem;

  async function claim(server: AgentServer): Promise<WorkItem[]> {
    if (!server.active) return [];
    return (await work.claim(server.id, leaseSeconds)).map((row) => open(row.sealedItem));
  }

  /** Looks at this node's dispatched work: log lines, results, lapsed leases. One look at a time. */
  async function look(): Promise<void> {
    if (looking) {
      lookAgain = true;
      return;
    }
    looking = true;
    try {
      do {
        lookAgain = false;
        const ids = [...dispatched.values()].filter((entry) => entry.inserted).map((entry) => entry.item.id);
        const found = await work.progress(ids, WANTED_SECONDS);
        for (const progress of found) apply(progress);
        const gone = new Set(ids);
        for (const progress of found) gone.delete(progress.id);
        for (const id of gone) {
          dispatched.get(id)?.settle({
            error: new Error(`The work was removed before the agent finished it (its server was deleted).`),
          });
        }
        await removeAbandoned();
      } while (lookAgain && !closed);
    } catch {
      // The database could not be read: the next look (change or timer) tries again.
    } finally {
      looking = false;
    }
    if (dispatched.size === 0) {
      clearInterval(watch);
      watch = undefined;
    }
  }

  function apply(progress: AgentWorkProgress): void {
    const entry = dispatched.get(progress.id);
    if (entry === undefined) return;
    for (const line of progress.lines) entry.run.log(line.level, line.message);
    if (progress.outcome !== undefined) entry.settle(outcomeOf(entry, progress.outcome));
    else if (progress.lapsed) entry.settle({ error: leaseLapsed(entry.serverName, entry.item.kind, leaseSeconds) });
  }

  function outcomeOf(entry: Dispatched, outcome: AgentWorkOutcome) {
    if ("error" in outcome) return { error: agentFailed(entry.serverName, outcome.error) };
    return { result: { results: outcome.results, changes: outcome.changes } };
  }

  async function removeAbandoned(): Promise<void> {
    const now = clock.now().getTime();
    if (now - abandonedRemovedAt < REMOVE_ABANDONED_EVERY_MS) return;
    abandonedRemovedAt = now;
    await work.removeAbandoned();
  }

  function ensureWatch(): void {
    if (watch !== undefined) return;
    // Within a quarter of the lease, so that lapsed work ends close to its lease, as on one machine.
    watch = setInterval(() => void look(), Math.min(sweepEveryMs(config), config.agentLeaseMs / 4));
    watch.unref();
  }

  async function dispatch(
    server: ServerTarget,
    kind: WorkKind,
    items: readonly DesiredItem[],
    run: TransportRun,
    simulate: boolean,
  ): Promise<WorkResult> {
    const refused = () => dispatchRefusal(run, closed);
    const before = refused();
    if (before !== undefined) throw before;
    const reason = unavailable(
      server,
      await repository.get(server.id),
      { polling: waiters.has(server.id), lastSeenMs: presence.lastSeenMs(server.id), nowMs: clock.now().getTime() },
      config,
    );
    if (reason !== undefined) throw new Error(reason);
    const after = refused();
    if (after !== undefined) throw after;
    const item = newWorkItem(kind, items, run, simulate, leaseSeconds);
    return new Promise<WorkResult>((resolve, reject) => {
      let added: Promise<void> = Promise.resolve();
      const onAbort = () => entry.settle({ error: run.signal.reason });
      const entry: Dispatched = {
        item,
        serverName: server.name,
        run,
        inserted: false,
        settle(outcome) {
          if (!dispatched.delete(item.id)) return;
          run.signal.removeEventListener("abort", onAbort);
          // Ended here (canceled, shutting down): the row must not reach an agent. A row ended by
          // a look is gone already; deleting it again costs nothing.
          void added.then(() => work.remove([item.id])).catch(() => undefined);
          if ("result" in outcome) resolve(outcome.result);
          else reject(outcome.error as Error);
        },
      };
      dispatched.set(item.id, entry);
      run.signal.addEventListener("abort", onAbort, { once: true });
      added = work.add({ id: item.id, serverId: server.id, sealedItem: seal(item) }, leaseSeconds, WANTED_SECONDS);
      added.then(
        () => {
          entry.inserted = true;
          ensureWatch();
          // Its poll held here: handed over now, without waiting for the change feed.
          waiters.get(server.id)?.wake();
        },
        (error: unknown) => entry.settle({ error }),
      );
    });
  }

  /** Holds the agent's poll until work is claimed for it, `waitMs` passes, it is aborted or revoked. */
  function hold(
    server: AgentServer,
    pollId: string,
    version: string | undefined,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<WorkItem[] | "revoked"> {
    let answer: WorkItem[] | "revoked" | undefined;
    let woken = true;
    let resume: (() => void) | undefined;
    const answered = (value: WorkItem[] | "revoked") => {
      if (answer !== undefined) return;
      answer = value;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      if (waiters.get(server.id) === poll) waiters.delete(server.id);
      resume?.();
    };
    const poll: HeldPoll = Object.assign(answered, {
      server,
      pollId,
      version,
      wake() {
        woken = true;
        resume?.();
      },
    });
    const onAbort = () => answered([]);
    // No wait: one claim answers (a timer of 0 would answer before it, and put its work back).
    const timer = waitMs > 0 ? setTimeout(() => answered([]), waitMs) : undefined;
    signal.addEventListener("abort", onAbort, { once: true });
    // Taken before the first claim: a second poll of the server is refused meanwhile.
    waiters.set(server.id, poll);
    sweep.ensure();

    const loop = async (): Promise<WorkItem[] | "revoked"> => {
      while (answer === undefined) {
        if (!woken) {
          await new Promise<void>((wake) => {
            resume = wake;
          });
          resume = undefined;
          continue;
        }
        woken = false;
        const claimed = await claim(server).catch(() => [] as WorkItem[]);
        if (claimed.length === 0) {
          if (waitMs <= 0 || closed) answered([]);
          continue;
        }
        if (answer === undefined) answered(claimed);
        // Answered meanwhile (time up, connection closed, revoked): the work goes back to the queue.
        else await work.release(claimed.map((item) => item.id)).catch(() => undefined);
      }
      return answer;
    };
    return loop();
  }

  /** The item of work handed out to this server's agent, still leased; not found otherwise. */
  async function handedOut(server: AgentServer, workId: string): Promise<WorkItem> {
    const sealed = await work.handedOut(server.id, workId);
    if (sealed === undefined) throw workNotFound(workId);
    return open(sealed);
  }

  /** Wakes this node's look at once when the work is its own (the change feed would, a round trip later). */
  const lookIfMine = (workId: string) => {
    if (dispatched.has(workId)) void look();
  };

  return {
    transport: transportThrough(dispatch),

    identify: async (key) => (key === "" ? undefined : repository.findByKeyHash(hashApiKey(key))),

    seen: presence.seen,

    async poll(server, { waitMs, version, signal }) {
      if (waiters.has(server.id)) throw alreadyConnected(server);
      // Held by a poll on another node (or one on this node that took it meanwhile).
      const pollId = randomUUID();
      if (!(await holds.take(server.id, nodeId, pollId, POLL_HOLD_SECONDS))) throw alreadyConnected(server);
      presence.seen(server, version);
      try {
        return await hold(server, pollId, version, waitMs, signal);
      } finally {
        presence.seen(server, version);
        // Released before the answer goes out: the agent's next poll, on any node, is not refused.
        await holds.release(server.id, pollId).catch(() => undefined);
      }
    },

    async log(server, workId, lines) {
      if (!(await work.appendLog(server.id, workId, lines, leaseSeconds))) throw workNotFound(workId);
      lookIfMine(workId);
    },

    async complete(server, workId, result) {
      const item = await handedOut(server, workId);
      const outcome: AgentWorkOutcome =
        result.error !== undefined
          ? { error: result.error }
          : { results: resultsInOrder(item, result.results), changes: result.changes };
      if (!(await work.finish(server.id, workId, outcome))) throw workNotFound(workId);
      lookIfMine(workId);
    },

    async workPackage(server, workId, itemKey) {
      const found = packageOf(await handedOut(server, workId), workId, itemKey);
      if (!(await work.renew(server.id, workId, leaseSeconds))) throw workNotFound(workId);
      return found;
    },

    isPolling: (serverId) => waiters.has(serverId),

    close() {
      closed = true;
      unsubscribe?.();
      sweep.stop();
      clearInterval(watch);
      for (const poll of [...waiters.values()]) poll([]);
      for (const entry of [...dispatched.values()]) entry.settle({ error: new Error("Wharf is shutting down.") });
    },
  };
}
