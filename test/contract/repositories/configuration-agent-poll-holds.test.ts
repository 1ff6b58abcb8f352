import { setTimeout as sleep } from "node:timers/promises";
import { beforeAll, expect } from "vitest";
import {
  type AgentPollHolds,
  createPostgresAgentPollHolds,
} from "../../../src/areas/configuration/agent-poll-holds-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { itOnPostgres, otherNodesForBlock, whileHeld } from "../../helpers/postgres-races.js";
import { insertAgentServer } from "../../helpers/seed-rows.js";

/**
 * Which poll holds each agent server in a cluster (agent-poll-holds-postgres.ts,
 * migrations/postgres/0010-agent-polls.sql): PostgreSQL only, as the table is (on SQLite the hub's
 * memory knows its held polls: every test is skipped there). Of two polls taking one server at
 * once on two nodes, exactly one gets it; a hold counts until it lapses on the database's clock,
 * unless its node renews it; a released one is free at once.
 */
const T0 = "2026-11-29T10:00:00.000Z";
const LONG = 60;
const SHORT = 0.3;

describeOnBothDatabases("Configuration agent poll holds (cluster)", (database) => {
  const it = itOnPostgres(database);
  const otherNode = otherNodesForBlock(database);
  let holds: AgentPollHolds;
  let serial = 0;
  const pollId = () => `00000000-0000-4000-8000-${String(++serial).padStart(12, "0")}`;

  const pool = () => {
    const current = database();
    if (current.kind !== "postgres") throw new Error("PostgreSQL only");
    return current.postgres.pool;
  };
  const addServer = (name: string) => insertAgentServer(database().exec, name, T0);
  const holderOf = async (serverId: number) =>
    (await database().exec("SELECT node_id, poll_id FROM agent_polls WHERE server_id = ?", [serverId]))[0];
  /** Two nodes, each on a pool of its own, taking the server at once for a poll of their own. */
  const twoNodesTake = (serverId: number) => {
    const [a, b] = [createPostgresAgentPollHolds(otherNode()), createPostgresAgentPollHolds(otherNode())];
    const [pollA, pollB] = [pollId(), pollId()];
    return async () => {
      const [tookA, tookB] = await Promise.all([
        a.take(serverId, "node-a", pollA, LONG),
        b.take(serverId, "node-b", pollB, LONG),
      ]);
      return { tookA, tookB, pollA, pollB };
    };
  };
  const exactlyOne = async (
    serverId: number,
    race: { tookA: boolean; tookB: boolean; pollA: string; pollB: string },
  ) => {
    expect([race.tookA, race.tookB].filter(Boolean)).toHaveLength(1);
    expect(await holderOf(serverId)).toEqual(
      race.tookA ? { node_id: "node-a", poll_id: race.pollA } : { node_id: "node-b", poll_id: race.pollB },
    );
  };

  beforeAll(() => {
    if (database().kind !== "postgres") return;
    holds = createPostgresAgentPollHolds((database() as Extract<TestDatabase, { kind: "postgres" }>).postgres);
  });

  it("gives a free server to exactly one of two polls taking it at once on two nodes", async () => {
    for (let round = 0; round < 5; round++) {
      const serverId = await addServer(`Free${round}`);
      // Both inserts wait behind a lock on the server's row (their foreign key's), then go at once.
      const race = await whileHeld(pool(), {
        hold: (holder) => holder.query("SELECT id FROM servers WHERE id = $1 FOR UPDATE", [serverId]),
        race: twoNodesTake(serverId),
        waiters: 2,
      });
      await exactlyOne(serverId, race);
    }
  });

  it("gives a lapsed hold to exactly one of two polls taking it over at once on two nodes", async () => {
    for (let round = 0; round < 5; round++) {
      const serverId = await addServer(`Lapsed${round}`);
      const dead = pollId();
      expect(await holds.take(serverId, "node-dead", dead, SHORT)).toBe(true);
      await sleep(SHORT * 1000 + 100);
      // Both wait behind a lock on the lapsed hold, then go at once.
      const race = await whileHeld(pool(), {
        hold: (holder) => holder.query("SELECT 1 FROM agent_polls WHERE server_id = $1 FOR UPDATE", [serverId]),
        race: twoNodesTake(serverId),
        waiters: 2,
      });
      await exactlyOne(serverId, race);
      // The dead node's poll lost it: not renewed, and its late release leaves the new hold alone.
      expect(await holds.renew([[serverId, dead]], LONG)).toEqual(new Set());
      await holds.release(serverId, dead);
      expect(await holds.take(serverId, "node-c", pollId(), LONG)).toBe(false);
    }
  });

  it("refuses a server held live, keeps a renewed hold past its first end, and frees a released one at once", async () => {
    const [serverId, other] = [await addServer("Held"), await addServer("Other")];
    const [first, second, third] = [pollId(), pollId(), pollId()];
    expect(await holds.take(serverId, "node-a", first, SHORT)).toBe(true);
    expect(await holds.take(serverId, "node-b", second, LONG)).toBe(false);
    // Only the holder's poll renews it; another server is not held by renewing.
    expect(
      await holds.renew(
        [
          [serverId, first],
          [other, second],
        ],
        LONG,
      ),
    ).toEqual(new Set([serverId]));
    await sleep(SHORT * 1000 + 100);
    expect(await holds.take(serverId, "node-b", second, LONG)).toBe(false);
    // A stranger's release leaves it; its own frees it for the next poll, on any node, at once.
    await holds.release(serverId, second);
    expect(await holds.take(serverId, "node-b", second, LONG)).toBe(false);
    await holds.release(serverId, first);
    expect(await holds.take(serverId, "node-b", third, LONG)).toBe(true);
    expect(await holderOf(serverId)).toEqual({ node_id: "node-b", poll_id: third });
    expect(await holds.take(other, "node-a", pollId(), LONG)).toBe(true);
  });

  it("lets go of the hold when its server is deleted", async () => {
    const serverId = await addServer("Deleted");
    expect(await holds.take(serverId, "node-a", pollId(), LONG)).toBe(true);
    await database().exec("DELETE FROM servers WHERE id = ?", [serverId]);
    expect(await holderOf(serverId)).toBeUndefined();
  });
});
