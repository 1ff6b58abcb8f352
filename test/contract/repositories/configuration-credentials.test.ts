import type pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Credential,
  type CredentialsRepository,
  type CredentialWrite,
  createCredentialsRepository,
} from "../../../src/areas/configuration/credentials-repository.js";
import { createPostgresCredentialsRepository } from "../../../src/areas/configuration/credentials-repository-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { itOnPostgres, otherNodesForBlock, untilWaitingOnLocks, whileHeld } from "../../helpers/postgres-races.js";
import { insertServer } from "../../helpers/seed-rows.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const LATER = "2026-11-29T11:00:00.000Z";

const credential = (name: string, fields: Partial<CredentialWrite> = {}): CredentialWrite => ({
  name,
  kind: "ssh-key",
  userName: "deploy",
  sealedSecret: `sealed ${name}`,
  ...fields,
});

const repositoryOn = (database: TestDatabase): CredentialsRepository =>
  database.kind === "sqlite"
    ? createCredentialsRepository(database.sqlite)
    : createPostgresCredentialsRepository(database.postgres);

describeOnBothDatabases("Credentials repository", (database) => {
  let credentials: CredentialsRepository;
  const ids = new Map<string, number>();
  beforeAll(() => {
    credentials = repositoryOn(database());
  });

  const stored = (name: string, fields: Partial<Credential> = {}): Credential => ({
    id: ids.get(name) ?? -1,
    name,
    kind: "ssh-key",
    userName: "deploy",
    createdAt: CREATED,
    modifiedAt: CREATED,
    ...fields,
  });

  it("stores credentials and lists them by name with ASCII letters folded, as SQLite's NOCASE", async () => {
    for (const name of ["beta", "Alpha", "Émile", "_under", "Zed"]) {
      const created = await credentials.insert(credential(name), CREATED);
      ids.set(name, created.id);
      expect(created).toEqual(stored(name));
    }
    // '_' sorts between the upper and the lower case letters; 'É' is not folded and sorts last.
    expect(await credentials.list()).toEqual(["_under", "Alpha", "beta", "Zed", "Émile"].map((name) => stored(name)));
    expect(await credentials.findByName("ALPHA")).toEqual(stored("Alpha"));
    expect(await credentials.findByName("émile")).toEqual(stored("Émile"));
    expect(await credentials.findByName("nobody")).toBeUndefined();
  });

  it("gives the sealed secret by id, and nothing for an unknown id", async () => {
    expect(await credentials.sealed(ids.get("beta") ?? -1)).toEqual({
      name: "beta",
      kind: "ssh-key",
      userName: "deploy",
      secret: "sealed beta",
    });
    expect(await credentials.sealed(999_999)).toBeUndefined();
  });

  it("refuses a name taken in any letter case, naming the stored spelling", async () => {
    await expect(credentials.insert(credential("ALPHA"), CREATED)).rejects.toMatchObject({
      kind: "conflict",
      code: "CREDENTIAL_NAME_TAKEN",
      message: "A credential named 'Alpha' already exists.",
    });
    expect(await credentials.list()).toHaveLength(5);
  });

  it("updates what the change gives, keeping the secret unless a new one is given", async () => {
    const seen: Credential[] = [];
    const updated = await credentials.update(
      "alpha",
      (current) => {
        seen.push(current);
        return { kind: "ssh-password", userName: "root" };
      },
      LATER,
    );
    expect(seen).toEqual([stored("Alpha")]);
    expect(updated).toEqual(stored("Alpha", { kind: "ssh-password", userName: "root", modifiedAt: LATER }));
    expect((await credentials.sealed(updated.id))?.secret).toBe("sealed Alpha");

    await credentials.update("Alpha", () => ({ sealedSecret: "sealed anew" }), LATER);
    expect(await credentials.sealed(updated.id)).toEqual({
      name: "Alpha",
      kind: "ssh-password",
      userName: "root",
      secret: "sealed anew",
    });
  });

  it("renames, to another letter case of its own name too, and refuses a name another credential has", async () => {
    const renamed = await credentials.update("Alpha", () => ({ name: "Alfa" }), LATER);
    expect(renamed.name).toBe("Alfa");
    expect(await credentials.findByName("alpha")).toBeUndefined();
    expect((await credentials.update("alfa", () => ({ name: "ALFA" }), LATER)).name).toBe("ALFA");
    await expect(credentials.update("ALFA", () => ({ name: "BETA" }), LATER)).rejects.toMatchObject({
      kind: "conflict",
      code: "CREDENTIAL_NAME_TAKEN",
      message: "A credential named 'beta' already exists.",
    });
    expect((await credentials.findByName("alfa"))?.name).toBe("ALFA");
  });

  it("updates nothing when the credential is missing or the change throws", async () => {
    await expect(credentials.update("nobody", () => ({}), LATER)).rejects.toMatchObject({
      kind: "not_found",
      code: "CREDENTIAL_NOT_FOUND",
    });
    const refused = new Error("refused by the change");
    await expect(
      credentials.update(
        "beta",
        () => {
          throw refused;
        },
        LATER,
      ),
    ).rejects.toBe(refused);
    expect(await credentials.findByName("beta")).toEqual(stored("beta"));
  });

  it("refuses to delete a credential servers use, naming up to ten of them by name", async () => {
    const { exec } = database();
    const zed = ids.get("Zed");
    const usingZed = { type: "ssh", credentialsId: zed ?? -1 } as const;
    await insertServer(exec, "web2", CREATED, usingZed);
    await insertServer(exec, "Web1", CREATED, usingZed);
    await expect(credentials.delete("zed")).rejects.toMatchObject({
      kind: "conflict",
      code: "CREDENTIAL_IN_USE",
      message: "The credential 'Zed' is used by servers Web1, web2: change or delete those servers first.",
    });
    for (let n = 3; n <= 11; n++) await insertServer(exec, `web${n}`, CREATED, usingZed);
    await expect(credentials.delete("Zed")).rejects.toMatchObject({
      code: "CREDENTIAL_IN_USE",
      message:
        "The credential 'Zed' is used by servers Web1, web10, web11, web2, web3, web4, web5, web6, web7, web8, ...: " +
        "change or delete those servers first.",
    });
    await exec("DELETE FROM servers WHERE credentials_id = ?", [zed]);
  });

  it("deletes a credential once; then it is not found", async () => {
    await credentials.delete("ZED");
    expect((await credentials.list()).map((c) => c.name)).toEqual(["_under", "ALFA", "beta", "Émile"]);
    await expect(credentials.delete("Zed")).rejects.toMatchObject({ kind: "not_found", code: "CREDENTIAL_NOT_FOUND" });
  });

  it("reseals the secrets the callback gives a new text for, in id order, and counts them", async () => {
    const calls: [string, string][] = [];
    const count = await credentials.resealSecrets((name, secret) => {
      calls.push([name, secret]);
      if (name === "beta") return "resealed beta";
      if (name === "_under") return secret; // unchanged: not counted
      return undefined;
    });
    expect(count).toBe(1);
    expect(calls).toEqual([
      ["beta", "sealed beta"],
      ["ALFA", "sealed anew"],
      ["Émile", "sealed Émile"],
      ["_under", "sealed _under"],
    ]);
    expect((await credentials.sealed(ids.get("beta") ?? -1))?.secret).toBe("resealed beta");
    expect((await credentials.sealed(ids.get("_under") ?? -1))?.secret).toBe("sealed _under");
  });

  it("undoes a reseal whose callback throws", async () => {
    const failure = new Error("unreadable");
    await expect(
      credentials.resealSecrets((name) => {
        if (name === "_under") throw failure;
        return "resealed";
      }),
    ).rejects.toBe(failure);
    expect((await credentials.sealed(ids.get("beta") ?? -1))?.secret).toBe("resealed beta");
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    await credentials.insert(credential("cache"), CREATED);
    await credentials.update("cache", () => ({ userName: "u" }), LATER);
    await credentials.resealSecrets(() => undefined);
    await credentials.delete("cache");
    expect(db.commits()).toBe(before + 4);
    await credentials.list();
    await credentials.findByName("beta");
    await credentials.sealed(1);
    expect(db.commits()).toBe(before + 4);
  });

  describe("two nodes on one PostgreSQL database", () => {
    const otherNode = otherNodesForBlock(database);
    const onPostgres = itOnPostgres(database);
    let a: CredentialsRepository;
    let b: CredentialsRepository;
    let pool: pg.Pool;
    beforeAll(() => {
      const db = database();
      if (db.kind !== "postgres") return;
      a = createPostgresCredentialsRepository(db.postgres);
      b = createPostgresCredentialsRepository(otherNode());
      pool = db.postgres.pool;
    });
    /** What the third session holds: the credential's row. */
    const rowOf = (id: number) => (holder: pg.PoolClient) =>
      holder.query("SELECT id FROM credentials WHERE id = $1 FOR UPDATE", [id]);

    onPostgres("two nodes creating one name: one wins, the other gets CREDENTIAL_NAME_TAKEN", async () => {
      for (let round = 0; round < 5; round++) {
        const results = await Promise.allSettled([
          a.insert(credential(`race${round}`), CREATED),
          b.insert(credential(`RACE${round}`), CREATED),
        ]);
        expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
        const [lost] = results.filter((result) => result.status === "rejected");
        expect(lost?.reason).toMatchObject({ kind: "conflict", code: "CREDENTIAL_NAME_TAKEN" });
      }
    });

    onPostgres("two nodes updating one credential: each change sees the other's result, none is lost", async () => {
      const target = await a.insert(credential("shared"), CREATED);
      // A third session holds the row, so that both updates have started before either can write.
      const appendOne = (current: Credential) => ({ userName: `${current.userName}+` });
      await whileHeld(pool, {
        hold: rowOf(target.id),
        race: () => Promise.all([a.update("shared", appendOne, LATER), b.update("shared", appendOne, LATER)]),
        waiters: 2,
      });
      expect((await a.findByName("shared"))?.userName).toBe("deploy++");
    });

    onPostgres(
      "a rename and a creation of that name on two nodes: one wins, the other gets CREDENTIAL_NAME_TAKEN",
      async () => {
        for (let round = 0; round < 5; round++) {
          await a.insert(credential(`old${round}`), CREATED);
          const results = await Promise.allSettled([
            a.update(`old${round}`, () => ({ name: `new${round}` }), LATER),
            b.insert(credential(`New${round}`), CREATED),
          ]);
          expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
          const [lost] = results.filter((result) => result.status === "rejected");
          expect(lost?.reason).toMatchObject({ kind: "conflict", code: "CREDENTIAL_NAME_TAKEN" });
        }
      },
    );

    onPostgres("two nodes deleting one credential: one deletes it, the other finds it gone", async () => {
      for (let round = 0; round < 5; round++) {
        await a.insert(credential(`doomed${round}`), CREATED);
        const results = await Promise.allSettled([a.delete(`doomed${round}`), b.delete(`doomed${round}`)]);
        expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
        const [lost] = results.filter((result) => result.status === "rejected");
        expect(lost?.reason).toMatchObject({ kind: "not_found", code: "CREDENTIAL_NOT_FOUND" });
      }
    });

    onPostgres("a reseal never writes over a secret another node updated after it started", async () => {
      const target = await a.insert(credential("rotated", { sealedSecret: "old" }), CREATED);
      await whileHeld(pool, {
        hold: rowOf(target.id),
        // The update queues first, the reseal behind it: the reseal must reseal the update's secret.
        race: async () => {
          const update = b.update("rotated", () => ({ sealedSecret: "new" }), LATER);
          await untilWaitingOnLocks(pool, 1);
          const reseal = a.resealSecrets((name, secret) => (name === "rotated" ? `resealed ${secret}` : undefined));
          return Promise.all([update, reseal]);
        },
        waiters: 2,
      });
      expect((await a.sealed(target.id))?.secret).toBe("resealed new");
    });
  });
});
