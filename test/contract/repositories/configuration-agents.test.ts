import { beforeAll, expect, it } from "vitest";
import { type AgentRepository, createAgentRepository } from "../../../src/areas/configuration/agent-repository.js";
import { createPostgresAgentRepository } from "../../../src/areas/configuration/agent-repository-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { insertServer } from "../../helpers/seed-rows.js";

/** The agent protocol's SQL (agent-repository.ts) on both databases. */
const T1 = "2026-11-29T10:00:00.000Z";
const T2 = "2026-11-29T10:01:00.000Z";

const repositoryOn = (database: TestDatabase): AgentRepository =>
  database.kind === "sqlite"
    ? createAgentRepository(database.sqlite)
    : createPostgresAgentRepository(database.postgres);

describeOnBothDatabases("Configuration agent repository", (database) => {
  let agents: AgentRepository;
  let agentId: number;
  let localId: number;

  beforeAll(async () => {
    agents = repositoryOn(database());
    const { exec } = database();
    agentId = Number(
      (
        await exec(
          `INSERT INTO servers (name, name_key, server_type, active, agent_key_hash, created_at, modified_at)
           VALUES ('Agent1', 'agent1', 'agent', 1, 'hash-1', ?, ?) RETURNING id`,
          [T1, T1],
        )
      )[0]?.id,
    );
    localId = await insertServer(exec, "local1", T1, { type: "local" });
  });

  it("finds an agent server by its key's hash, and by id; never a server of another type", async () => {
    const expected = {
      id: agentId,
      name: "Agent1",
      active: true,
      hasKey: true,
      keyHash: "hash-1",
      lastSeenAt: undefined,
    };
    expect(await agents.findByKeyHash("hash-1")).toEqual(expected);
    expect(await agents.get(agentId)).toEqual(expected);
    expect(await agents.findByKeyHash("hash-2")).toBeUndefined();
    expect(await agents.get(localId)).toBeUndefined();
  });

  it("records when the agent was seen, keeping the version it last told when none is given", async () => {
    await agents.recordSeen(agentId, T1, "1.2.3");
    await agents.recordSeen(agentId, T2, undefined);
    expect((await agents.get(agentId))?.lastSeenAt).toBe(T2);
    expect(await database().exec("SELECT agent_version FROM servers WHERE id = ?", [agentId])).toEqual([
      { agent_version: "1.2.3" },
    ]);
  });

  it("finds no server for a revoked key, and a deactivated one as inactive", async () => {
    await database().exec("UPDATE servers SET active = 0 WHERE id = ?", [agentId]);
    expect((await agents.get(agentId))?.active).toBe(false);
    await database().exec("UPDATE servers SET agent_key_hash = NULL WHERE id = ?", [agentId]);
    expect(await agents.findByKeyHash("hash-1")).toBeUndefined();
    expect(await agents.get(agentId)).toMatchObject({ hasKey: false, keyHash: undefined });
  });
});
