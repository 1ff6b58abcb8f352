import type pg from "pg";
import type { LogLine } from "../../agent/protocol.js";
import type { AppliedChange, ItemResult } from "../../drift/model.js";
import { type PostgresDb, quietTransaction, readRows, writeRows } from "../../storage/postgres/database.js";

/**
 * The agent work of a cluster (migrations/postgres/0009-agent-work.sql), for agent-hub-cluster.ts.
 * PostgreSQL only: on one machine the queue is the hub's memory. Leases are on the database's
 * clock, so that the nodes' clocks need not agree.
 *
 * Writes someone waits for notify the cluster (new or released work wakes the node holding the
 * agent's poll; log lines and the result wake the dispatching node); claims, renewals and deletes
 * are quiet. Every write about handed-out work is conditional on its lease: once it lapsed, the
 * agent's log, result and downloads are refused, and the dispatching node ends the work.
 */
export type AgentWorkOutcome =
  { readonly results: readonly ItemResult[]; readonly changes: readonly AppliedChange[] } | { readonly error: string };

export interface AgentWorkProgress {
  readonly id: string;
  /** Lines posted since the last look (taken: they are not returned again). */
  readonly lines: readonly LogLine[];
  /** The result, once posted (the row is then gone). */
  readonly outcome: AgentWorkOutcome | undefined;
  /** No result within the lease (the row is then gone). */
  readonly lapsed: boolean;
}

export interface NewAgentWork {
  readonly id: string;
  readonly serverId: number;
  readonly sealedItem: string;
}

export interface AgentWorkRepository {
  /** Queues work for the server's agent, leased for `leaseSeconds` and wanted for `wantedSeconds`. */
  add(work: NewAgentWork, leaseSeconds: number, wantedSeconds: number): Promise<void>;
  /**
   * Hands the server's queued work (still leased and wanted) to the caller, oldest first, leased
   * anew. Concurrent nodes skip each other's rows (FOR UPDATE SKIP LOCKED): no work is taken twice.
   */
  claim(serverId: number, leaseSeconds: number): Promise<{ id: string; sealedItem: string }[]>;
  /** Queues claimed work again (the poll it was claimed for went away before answering). */
  release(ids: readonly string[]): Promise<void>;
  /** The sealed item of work handed out to this server's agent and still leased; undefined otherwise. */
  handedOut(serverId: number, id: string): Promise<string | undefined>;
  /** Renews the lease of work handed out to this server's agent; false when there is none (any more). */
  renew(serverId: number, id: string, leaseSeconds: number): Promise<boolean>;
  /** Adds log lines to handed-out work and renews its lease; false when there is none (any more). */
  appendLog(serverId: number, id: string, lines: readonly LogLine[], leaseSeconds: number): Promise<boolean>;
  /** Records the result of handed-out work still leased; false when there is none (any more). */
  finish(serverId: number, id: string, outcome: AgentWorkOutcome): Promise<boolean>;
  /** The agent lives: its queued work (waiting while it does other work) stays leased. */
  renewQueued(serverId: number, leaseSeconds: number): Promise<void>;
  /**
   * The dispatching node's look at its work: takes posted log lines, deletes finished and lapsed
   * rows (returning their outcome), and renews `wanted_until` of the others. Work not found (its
   * server was deleted) is not returned.
   */
  progress(ids: readonly string[], wantedSeconds: number): Promise<AgentWorkProgress[]>;
  /** Deletes work nobody waits for any more (canceled, or Wharf shutting down). */
  remove(ids: readonly string[]): Promise<void>;
  /** Deletes work whose dispatching node stopped renewing it (it died); returns how many. */
  removeAbandoned(): Promise<number>;
}

const HANDED_OUT = "server_id = $1 AND id = $2 AND state = 'handed_out' AND lease_until >= now()";
const seconds = (placeholder: string) => `now() + make_interval(secs => ${placeholder})`;

interface ProgressRow {
  id: string;
  log: LogLine[];
  outcome: AgentWorkOutcome | null;
  lapsed: boolean;
}

async function quietly(db: PostgresDb, sql: string, params: readonly unknown[]): Promise<pg.QueryResult> {
  return quietTransaction(db, (client) => client.query(sql, params as unknown[]));
}

export function createPostgresAgentWorkRepository(db: PostgresDb): AgentWorkRepository {
  const renew = async (serverId: number, id: string, leaseSeconds: number) => {
    const renewed = await quietly(db, `UPDATE agent_work SET lease_until = ${seconds("$3")} WHERE ${HANDED_OUT}`, [
      serverId,
      id,
      leaseSeconds,
    ]);
    return renewed.rowCount === 1;
  };
  return {
    async add(work, leaseSeconds, wantedSeconds) {
      await writeRows(
        db,
        `INSERT INTO agent_work (id, server_id, sealed_item, state, lease_until, wanted_until)
         VALUES ($1, $2, $3, 'queued', ${seconds("$4")}, ${seconds("$5")})`,
        [work.id, work.serverId, work.sealedItem, leaseSeconds, wantedSeconds],
      );
    },

    async claim(serverId, leaseSeconds) {
      const claimed = await quietly(
        db,
        `WITH next AS (
           SELECT id FROM agent_work
            WHERE server_id = $1 AND state = 'queued' AND lease_until >= now() AND wanted_until >= now()
            ORDER BY seq
            FOR UPDATE SKIP LOCKED
         )
         UPDATE agent_work SET state = 'handed_out', lease_until = ${seconds("$2")}
           FROM next WHERE agent_work.id = next.id
         RETURNING agent_work.id, agent_work.seq, agent_work.sealed_item`,
        [serverId, leaseSeconds],
      );
      return (claimed.rows as { id: string; seq: number; sealed_item: string }[])
        .sort((a, b) => a.seq - b.seq)
        .map((row) => ({ id: row.id, sealedItem: row.sealed_item }));
    },

    async release(ids) {
      if (ids.length === 0) return;
      await writeRows(
        db,
        "UPDATE agent_work SET state = 'queued' WHERE id = ANY ($1::text[]) AND state = 'handed_out' AND outcome IS NULL",
        [ids],
      );
    },

    async handedOut(serverId, id) {
      const rows = await readRows<{ sealed_item: string }>(
        db,
        `SELECT sealed_item FROM agent_work WHERE ${HANDED_OUT}`,
        [serverId, id],
      );
      return rows[0]?.sealed_item;
    },

    renew,

    async appendLog(serverId, id, lines, leaseSeconds) {
      // A heartbeat (no lines) only renews: nobody needs to hear it.
      if (lines.length === 0) return renew(serverId, id, leaseSeconds);
      const appended = await writeRows(
        db,
        `UPDATE agent_work SET log = log || $4::jsonb, lease_until = ${seconds("$3")} WHERE ${HANDED_OUT}`,
        [serverId, id, leaseSeconds, JSON.stringify(lines)],
      );
      return appended.rowCount === 1;
    },

    async finish(serverId, id, outcome) {
      const finished = await writeRows(
        db,
        `UPDATE agent_work SET state = 'finished', outcome = $3::jsonb WHERE ${HANDED_OUT}`,
        [serverId, id, JSON.stringify(outcome)],
      );
      return finished.rowCount === 1;
    },

    async renewQueued(serverId, leaseSeconds) {
      await quietly(
        db,
        `UPDATE agent_work SET lease_until = ${seconds("$2")} WHERE server_id = $1 AND state = 'queued'`,
        [serverId, leaseSeconds],
      );
    },

    async progress(ids, wantedSeconds) {
      if (ids.length === 0) return [];
      return quietTransaction(db, async (client) => {
        const rows = (
          await client.query<ProgressRow>(
            `SELECT id, log, outcome, (outcome IS NULL AND lease_until < now()) AS lapsed
               FROM agent_work WHERE id = ANY ($1::text[]) FOR UPDATE`,
            [ids],
          )
        ).rows;
        const ended = rows.filter((row) => row.outcome !== null || row.lapsed).map((row) => row.id);
        const waiting = rows.filter((row) => row.outcome === null && !row.lapsed).map((row) => row.id);
        if (ended.length > 0) await client.query("DELETE FROM agent_work WHERE id = ANY ($1::text[])", [ended]);
        if (waiting.length > 0) {
          await client.query(
            `UPDATE agent_work SET log = '[]'::jsonb, wanted_until = ${seconds("$2")} WHERE id = ANY ($1::text[])`,
            [waiting, wantedSeconds],
          );
        }
        return rows.map((row) => ({
          id: row.id,
          lines: row.log,
          outcome: row.outcome ?? undefined,
          lapsed: row.lapsed,
        }));
      });
    },

    async remove(ids) {
      if (ids.length === 0) return;
      await quietly(db, "DELETE FROM agent_work WHERE id = ANY ($1::text[])", [ids]);
    },

    async removeAbandoned() {
      return (await quietly(db, "DELETE FROM agent_work WHERE wanted_until < now()", [])).rowCount ?? 0;
    },
  };
}
