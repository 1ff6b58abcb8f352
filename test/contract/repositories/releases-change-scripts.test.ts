import { beforeAll, describe, expect, it } from "vitest";
import type { ChangeScript, ChangeScriptDraft } from "../../../src/areas/releases/change-script-model.js";
import {
  type ChangeScriptRepository,
  createChangeScriptRepository,
} from "../../../src/areas/releases/change-script-repository.js";
import { createPostgresChangeScriptRepository } from "../../../src/areas/releases/change-script-repository-postgres.js";
import type { Actor } from "../../../src/areas/releases/release-repository.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { onOtherNode, outcomes, whileHeld } from "../../helpers/postgres-races.js";
import { insertApplication, insertRelease } from "../../helpers/seed-rows.js";

const NOW = "2026-11-29T10:00:00.000Z";
const LATER = "2026-11-29T11:00:00.000Z";
const ANN: Actor = { by: "Ann", now: NOW };
const BOB: Actor = { by: "Bob", now: LATER };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const repositoryOn = (database: TestDatabase): ChangeScriptRepository =>
  database.kind === "sqlite"
    ? createChangeScriptRepository(database.sqlite)
    : createPostgresChangeScriptRepository(database.postgres);

describeOnBothDatabases("Change script repository", (database) => {
  let scripts: ChangeScriptRepository;
  let shop: number;
  let other: number;
  /** Release ids by number; "3.0" has the higher sequence though created before "2.0". */
  const release: Record<string, number> = {};

  const newApp = (name: string) => insertApplication(database().exec, name, NOW);
  const newRelease = (applicationId: number, number: string, sequence: number) =>
    insertRelease(database().exec, {
      applicationId,
      number,
      sequence,
      name: `Release ${number}`,
      createdBy: "Ann",
      createdOn: NOW,
    });
  const draft = (fields: Partial<ChangeScriptDraft> & { name: string }): ChangeScriptDraft => ({
    applicationId: shop,
    releaseNumber: "1.0",
    text: `-- ${fields.name}`,
    ...fields,
  });

  beforeAll(async () => {
    scripts = repositoryOn(database());
    shop = await newApp("Shop");
    other = await newApp("Other");
    release["1.0"] = await newRelease(shop, "1.0", 1);
    release["3.0"] = await newRelease(shop, "3.0", 3);
    release["2.0"] = await newRelease(shop, "2.0", 2);
    release.RC = await newRelease(shop, "RC", 0);
    release.other = await newRelease(other, "1.0", 1);
  });

  describe("save", () => {
    it("creates a script, shown whole; a save of its name (any letter case) in the release changes it", async () => {
      const created = await scripts.save(draft({ name: "Create tables", text: "CREATE TABLE t (id int);" }), ANN);
      expect(created).toEqual({
        id: created.id,
        applicationId: shop,
        applicationName: "Shop",
        releaseId: release["1.0"],
        releaseNumber: "1.0",
        releaseName: "Release 1.0",
        name: "Create tables",
        text: "CREATE TABLE t (id int);",
        active: true,
        guid: expect.stringMatching(UUID),
        createdBy: "Ann",
        createdOn: NOW,
        modifiedBy: "Ann",
        modifiedOn: NOW,
      });
      expect(await scripts.find(created.id)).toEqual(created);

      const changed = await scripts.save(draft({ name: "CREATE TABLES", text: "v2", releaseNumber: "1.0" }), BOB);
      expect(changed).toEqual({
        ...created,
        name: "CREATE TABLES",
        text: "v2",
        modifiedBy: "Bob",
        modifiedOn: LATER,
      });
      // `active` is changed when given, and kept when not.
      expect((await scripts.save(draft({ name: "create tables", active: false }), BOB)).active).toBe(false);
      const kept = await scripts.save(draft({ name: "create tables", text: "v3" }), BOB);
      expect(kept).toEqual({ ...changed, name: "create tables", text: "v3", active: false });
      expect((await scripts.save(draft({ name: "Seed", active: false }), ANN)).active).toBe(false);
    });

    it("moves and renames a script by id within its application, keeping its guid", async () => {
      const script = await scripts.save(draft({ name: "Index" }), ANN);
      const moved = await scripts.save(
        draft({ scriptId: script.id, releaseNumber: "2.0", name: "Index users", text: "CREATE INDEX" }),
        BOB,
      );
      expect(moved).toEqual({
        ...script,
        releaseId: release["2.0"],
        releaseNumber: "2.0",
        releaseName: "Release 2.0",
        name: "Index users",
        text: "CREATE INDEX",
        modifiedBy: "Bob",
        modifiedOn: LATER,
      });
    });

    it("refuses an unknown application, release or script, and a name taken in the release, with the API's errors", async () => {
      await expect(scripts.save(draft({ name: "x", applicationId: 999_999 }), ANN)).rejects.toMatchObject({
        kind: "not_found",
        code: "APPLICATION_NOT_FOUND",
        message: "No application has the id 999999.",
      });
      await expect(scripts.save(draft({ name: "x", releaseNumber: "9.9" }), ANN)).rejects.toMatchObject({
        kind: "not_found",
        code: "RELEASE_NOT_FOUND",
        message: `The application ${shop} has no release '9.9'.`,
      });
      await expect(scripts.save(draft({ name: "x", scriptId: 999_999 }), ANN)).rejects.toMatchObject({
        kind: "not_found",
        code: "CHANGE_SCRIPT_NOT_FOUND",
        message: `The application ${shop} has no change script with the id 999999.`,
      });
      const foreign = await scripts.save(draft({ name: "Elsewhere", applicationId: other }), ANN);
      await expect(scripts.save(draft({ name: "x", scriptId: foreign.id }), ANN)).rejects.toMatchObject({
        kind: "not_found",
        code: "CHANGE_SCRIPT_NOT_FOUND",
      });
      const index = (await scripts.list({ applicationId: shop, releaseNumber: "2.0", includeInactive: true }))[0];
      await expect(
        scripts.save(draft({ name: "SEED", scriptId: index?.id, releaseNumber: "1.0" }), ANN),
      ).rejects.toMatchObject({
        kind: "conflict",
        code: "CHANGE_SCRIPT_EXISTS",
        message: "The release '1.0' already has a change script named 'SEED'.",
      });
      expect(await scripts.find(index?.id ?? 0)).toEqual(index);
    });
  });

  describe("list, find and delete", () => {
    it("lists newest release first (by sequence), each release's scripts in creation order; inactive ones when asked", async () => {
      const rc = await scripts.save(draft({ name: "Candidate", releaseNumber: "rc" }), ANN);
      const third = await scripts.save(draft({ name: "Third", releaseNumber: "3.0" }), ANN);
      const all = await scripts.list({ applicationId: shop, includeInactive: true });
      expect(all.map((s) => [s.releaseNumber, s.name])).toEqual([
        ["3.0", "Third"],
        ["2.0", "Index users"],
        ["1.0", "create tables"],
        ["1.0", "Seed"],
        ["RC", "Candidate"],
      ]);
      expect(all[0]).toEqual(third);
      expect(all[4]).toEqual(rc);
      expect(await scripts.list({ applicationId: shop, includeInactive: false })).toEqual(all.filter((s) => s.active));
      expect(await scripts.list({ applicationId: shop, includeInactive: true, limit: 2 })).toEqual(all.slice(0, 2));
      expect(await scripts.list({ applicationId: shop, includeInactive: true, limit: 0 })).toEqual([]);
      expect(await scripts.list({ applicationId: shop, includeInactive: true, limit: -1 })).toEqual(all);
      expect(await scripts.list({ applicationId: shop, releaseNumber: "Rc", includeInactive: false })).toEqual([rc]);
      expect(
        await scripts.list({ applicationId: shop, releaseNumber: "1.0", includeInactive: true, limit: 1 }),
      ).toEqual([all[2]]);
      expect(await scripts.list({ applicationId: shop, releaseNumber: "9.9", includeInactive: true })).toEqual([]);
      expect(await scripts.list({ applicationId: 999_999, includeInactive: true })).toEqual([]);
      expect(await scripts.find(999_999)).toBeUndefined();
    });

    it("deletes a script once; deleting its release deletes its scripts", async () => {
      const [third] = await scripts.list({ applicationId: shop, releaseNumber: "3.0", includeInactive: true });
      expect(await scripts.delete(third?.id ?? 0)).toBe(true);
      expect(await scripts.delete(third?.id ?? 0)).toBe(false);
      expect(await scripts.find(third?.id ?? 0)).toBeUndefined();

      const [rc] = await scripts.list({ applicationId: shop, releaseNumber: "RC", includeInactive: true });
      await database().exec("DELETE FROM releases WHERE id = ?", [release.RC]);
      expect(await scripts.find(rc?.id ?? 0)).toBeUndefined();
    });
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    const script = await scripts.save(draft({ name: "Cached" }), ANN);
    await scripts.delete(script.id);
    expect(db.commits()).toBe(before + 2);
  });

  describe("concurrent writers on two nodes (PostgreSQL)", () => {
    it("the same new name saved at once from two nodes: one script, created by one save and changed by the other", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const { pool } = db.postgres;
      await onOtherNode(db, createPostgresChangeScriptRepository, async (second) => {
        for (let round = 0; round < 3; round++) {
          // A third session holds the release's row until both saves wait: without a lock of their
          // own, both would find no script of that name, and the second insert would fail.
          const results = await whileHeld(pool, {
            hold: (holder) => holder.query("SELECT id FROM releases WHERE id = $1 FOR UPDATE", [release["1.0"]]),
            race: () =>
              outcomes([
                scripts.save(draft({ name: `Racy${round}`, text: "first" }), ANN),
                second.save(draft({ name: `RACY${round}`, text: "second" }), BOB),
              ]),
            waiters: 2,
          });
          expect(results.filter((r) => !("value" in r))).toEqual([]);
          const saved = results.flatMap((r) => ("value" in r ? [r.value] : []));
          expect(new Set(saved.map((s: ChangeScript) => s.id)).size).toBe(1);
          expect(
            (await scripts.list({ applicationId: shop, releaseNumber: "1.0", includeInactive: true })).filter(
              (s) => s.name.toLowerCase() === `racy${round}`,
            ),
          ).toHaveLength(1);
        }
      });
    });

    it("two scripts renamed onto one name at once: one wins, the other gets CHANGE_SCRIPT_EXISTS", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      await onOtherNode(db, createPostgresChangeScriptRepository, async (second) => {
        const a = await scripts.save(draft({ name: "Left", releaseNumber: "2.0" }), ANN);
        const b = await scripts.save(draft({ name: "Right", releaseNumber: "3.0" }), ANN);
        const results = await outcomes([
          scripts.save(draft({ scriptId: a.id, name: "Merged", releaseNumber: "1.0" }), ANN),
          second.save(draft({ scriptId: b.id, name: "merged", releaseNumber: "1.0" }), ANN),
        ]);
        expect(results.filter((r) => "value" in r)).toHaveLength(1);
        expect(results.filter((r) => !("value" in r))).toEqual([{ kind: "conflict", code: "CHANGE_SCRIPT_EXISTS" }]);
      });
    });

    it("a script deactivated while another node moves it: the move keeps it inactive, whichever goes first", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const { pool } = db.postgres;
      await onOtherNode(db, createPostgresChangeScriptRepository, async (second) => {
        for (let round = 0; round < 4; round++) {
          const script = await scripts.save(draft({ name: `Toggled${round}`, active: true }), ANN);
          // A third session holds the script's row until both saves wait for it.
          const results = await whileHeld(pool, {
            hold: (holder) => holder.query("SELECT id FROM change_scripts WHERE id = $1 FOR UPDATE", [script.id]),
            race: () =>
              outcomes([
                scripts.save(draft({ scriptId: script.id, name: script.name, active: false }), BOB),
                second.save(draft({ scriptId: script.id, name: script.name, releaseNumber: "2.0" }), BOB),
              ]),
            waiters: 2,
          });
          expect(results.filter((r) => !("value" in r))).toEqual([]);
          expect((await scripts.find(script.id))?.active).toBe(false);
        }
      });
    });
  });
});
