import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  changeScriptResultSchema,
  changeScriptsResultSchema,
  scriptIdResultSchema,
} from "../../src/areas/native/change-script-rows.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { manualClock } from "../helpers/clock.js";
import { createPersonalKey, createSystemKey, createUser, execute, grant, readOne } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * Database change scripts through the native API (issue 14 section 1; seed-api.md area H;
 * compat.md 7.7): created and changed through DatabaseChangeScripts_CreateOrUpdateChangeScript
 * (JSON, form and query-string calls, the last as BuildMaster.Net sends them), read through
 * DatabaseChangeScripts_GetChangeScripts / _GetChangeScript with BuildMaster's columns, deleted,
 * and gone with their release or application. Time is a manual clock.
 */
let t: TestApp;
let r: ReleasesFixtures;
let nativeKey: string;
let webId: number;
let apiId: number;
const time = manualClock(Date.parse("2030-01-01T00:00:00.000Z"));

type Json = Record<string, unknown>;

beforeAll(async () => {
  t = await buildTestApp({ clock: time.clock });
  r = releasesFixtures(t);
  nativeKey = await createSystemKey(t.database, ["native"]);
  webId = await r.setup("Web");
  apiId = await r.setup("Api");
  for (const number of ["1.0", "2.0"]) await r.release(webId, number, "Web-pipeline");
  await r.release(apiId, "1.0", "Api-pipeline");
});
afterAll(async () => t.close());

function get(path: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: "GET", url: path });
}

function postJson(path: string, body: unknown): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: "POST",
    url: path,
    headers: { "content-type": "application/json" },
    payload: JSON.stringify(body),
  });
}

function postForm(path: string, pairs: Record<string, string | number>): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: "POST",
    url: path,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: new URLSearchParams(Object.entries(pairs).map(([k, v]) => [k, String(v)])).toString(),
  });
}

function refused(res: LightMyRequestResponse, status: number, message: string | RegExp): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers["content-type"]).toBe("text/plain");
  if (typeof message === "string") expect(res.body).toBe(message);
  else expect(res.body).toMatch(message);
}

/** Creates or updates through JSON with the native key; returns the Script_Id. */
async function save(args: Json, key = nativeKey): Promise<number> {
  const id = r.ok<number>(
    await postJson("/api/json/DatabaseChangeScripts_CreateOrUpdateChangeScript", { API_Key: key, ...args }),
  );
  return scriptIdResultSchema.parse(id);
}

async function list(query: string, key = nativeKey): Promise<Json[]> {
  const rows = r.ok<Json[]>(await get(`/api/json/DatabaseChangeScripts_GetChangeScripts?key=${key}&${query}`));
  expect(changeScriptsResultSchema.parse(rows)).toEqual(rows);
  return rows;
}

async function one(id: number): Promise<Json | null> {
  const row = r.ok<Json | null>(
    await get(`/api/json/DatabaseChangeScripts_GetChangeScript?key=${nativeKey}&Script_Id=${id}`),
  );
  expect(changeScriptResultSchema.parse(row)).toEqual(row);
  return row;
}

describe("DatabaseChangeScripts_CreateOrUpdateChangeScript", () => {
  it("creates from a JSON body and from a form body; both show in the list with BuildMaster's columns", async () => {
    const created = time.at();
    const tables = await save({
      Application_Id: webId,
      Release_Number: "1.0",
      Script_Name: "001 tables",
      Script_Text: "CREATE TABLE t (id INT);",
    });
    const form = r.ok<number>(
      await postForm("/api/json/DatabaseChangeScripts_CreateOrUpdateChangeScript", {
        key: nativeKey,
        application_id: webId,
        release_number: "1.0",
        script_name: "002 data",
        script_text: "INSERT INTO t VALUES (1);",
      }),
    );
    expect(form).toBeGreaterThan(tables);

    const rows = await list(`Application_Id=${webId}`);
    expect(rows.map((row) => row.Script_Name)).toEqual(["001 tables", "002 data"]);
    const [row] = rows;
    expect(row).toEqual({
      Script_Id: tables,
      Script_Guid: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      Application_Id: webId,
      Application_Name: "Web",
      Release_Id: expect.any(Number),
      Release_Number: "1.0",
      Release_Name: "1.0",
      Script_Name: "001 tables",
      Script_Text: "CREATE TABLE t (id INT);",
      Active_Indicator: true,
      CreatedBy_User_Name: "API",
      CreatedOn_Date: created,
      ModifiedBy_User_Name: "API",
      ModifiedOn_Date: created,
    });
    expect(JSON.stringify(rows)).not.toContain("null");
    expect(await one(tables)).toEqual(row);
  });

  it("takes everything in the query string with an empty body, as BuildMaster.Net sends it (Script_Id=0: new)", async () => {
    const res = await t.app.inject({
      method: "GET",
      url:
        `/api/json/DatabaseChangeScripts_CreateOrUpdateChangeScript?key=${nativeKey}&Application_Id=${apiId}` +
        `&Release_Number=1.0&Deployable_Id=0&Script_Name=init&Script_Text=${encodeURIComponent("SELECT 1;")}` +
        "&Active_Indicator=Y&Script_Id=0",
    });
    const id = r.ok<number>(res);
    expect(res.body).toBe(String(id));
    expect(await one(id)).toMatchObject({ Application_Name: "Api", Script_Name: "init", Script_Text: "SELECT 1;" });
  });

  it("keeps a multi-line script's lines and a name with quotes as given (trimmed at both ends only)", async () => {
    const text = "CREATE TABLE a (id INT);\r\nGO\n\n  CREATE TABLE b (name NVARCHAR(50) DEFAULT 'x');";
    const name = '003 it\'s "quoted"; DROP TABLE change_scripts; --';
    const id = await save({
      Application_Id: apiId,
      Release_Number: "1.0",
      Script_Name: name,
      Script_Text: `\n${text}\n\n`,
    });
    expect(await one(id)).toMatchObject({ Script_Name: name, Script_Text: text });
  });

  it("updates the script of that name (any case): modified by/on change, created by/on do not", async () => {
    const viewer = await createUser(t.database, "dba-alice");
    await grant(t.database, { user: viewer, attributes: ["Applications_View", "Releases_Manage"] });
    const alice = await createPersonalKey(t.database, viewer);
    const createdOn = time.at();
    const id = await save(
      {
        Application_Id: webId,
        Release_Number: "2.0",
        Script_Name: "Add Index",
        Script_Text: "CREATE INDEX i ON t(id);",
      },
      alice,
    );
    time.advance(90_000);
    const modifiedOn = time.at();
    const same = await save({
      Application_Id: webId,
      Release_Number: "2.0",
      Script_Name: "add index",
      Script_Text: "CREATE UNIQUE INDEX i ON t(id);",
    });
    expect(same).toBe(id);
    expect(await one(id)).toMatchObject({
      Script_Name: "add index",
      Script_Text: "CREATE UNIQUE INDEX i ON t(id);",
      CreatedBy_User_Name: "dba-alice",
      CreatedOn_Date: createdOn,
      ModifiedBy_User_Name: "API",
      ModifiedOn_Date: modifiedOn,
    });
    expect(await list(`Application_Id=${webId}&Release_Number=2.0`)).toHaveLength(1);
  });

  it("changes, renames and moves the script Script_Id names; keeps its guid; Active_Indicator=N hides it", async () => {
    const id = await save({ Application_Id: webId, Release_Number: "2.0", Script_Name: "move me", Script_Text: "x" });
    const guid = (await one(id))?.Script_Guid;
    time.advance(1000);
    expect(
      await save({
        Application_Id: webId,
        Release_Number: "1.0",
        Script_Id: id,
        Script_Name: "moved",
        Script_Text: "y",
        Active_Indicator: "N",
      }),
    ).toBe(id);
    expect(await one(id)).toMatchObject({
      Release_Number: "1.0",
      Script_Name: "moved",
      Script_Text: "y",
      Active_Indicator: false,
      Script_Guid: guid,
    });
    const names = async (query: string) => (await list(`Application_Id=${webId}&${query}`)).map((s) => s.Script_Name);
    expect(await names("Release_Number=1.0")).toContain("moved");
    expect(await names("Release_Number=1.0&IncludeInactive_Indicator=N")).not.toContain("moved");
    // A change without Active_Indicator leaves it as it was.
    await save({ Application_Id: webId, Release_Number: "1.0", Script_Name: "MOVED", Script_Text: "z" });
    expect(await one(id)).toMatchObject({ Active_Indicator: false, Script_Text: "z" });
  });

  it("409 for a name another script of the release has; 404 for unknown application, release or script", async () => {
    const id = await save({ Application_Id: webId, Release_Number: "2.0", Script_Name: "taken?", Script_Text: "a" });
    const call = (args: Json) =>
      postJson("/api/json/DatabaseChangeScripts_CreateOrUpdateChangeScript", { API_Key: nativeKey, ...args });
    refused(
      await call({
        Application_Id: webId,
        Release_Number: "2.0",
        Script_Id: id,
        Script_Name: "ADD INDEX",
        Script_Text: "b",
      }),
      409,
      "The release '2.0' already has a change script named 'ADD INDEX'.",
    );
    refused(
      await call({ Application_Id: 99999, Release_Number: "1.0", Script_Name: "s", Script_Text: "t" }),
      404,
      "No application has the id 99999.",
    );
    refused(
      await call({ Application_Id: webId, Release_Number: "9.9", Script_Name: "s", Script_Text: "t" }),
      404,
      `The application ${webId} has no release '9.9'.`,
    );
    refused(
      await call({ Application_Id: apiId, Release_Number: "1.0", Script_Id: id, Script_Name: "s", Script_Text: "t" }),
      404,
      `The application ${apiId} has no change script with the id ${id}.`,
    );
  });

  it("400 naming a missing or malformed argument", async () => {
    const url = `/api/json/DatabaseChangeScripts_CreateOrUpdateChangeScript?key=${nativeKey}`;
    const full = { Application_Id: webId, Release_Number: "1.0", Script_Name: "n", Script_Text: "t" };
    for (const name of Object.keys(full)) {
      const args = Object.fromEntries(Object.entries(full).filter(([k]) => k !== name));
      refused(await postJson(url, args), 400, `The parameter '${name}' is required.`);
    }
    refused(await postJson(url, { ...full, Script_Text: "   " }), 400, "The parameter 'Script_Text' is required.");
    refused(
      await postJson(url, { ...full, Script_Name: "two\nlines" }),
      400,
      "The parameter 'Script_Name' must be one line of at most 200 characters.",
    );
    refused(
      await postJson(url, { ...full, Script_Name: "n".repeat(201) }),
      400,
      "The parameter 'Script_Name' must be one line of at most 200 characters.",
    );
    refused(
      await postJson(url, { ...full, Active_Indicator: "perhaps" }),
      400,
      "The parameter 'Active_Indicator' must be Y or N (true or false).",
    );
  });
});

describe("reads", () => {
  it("give empty results for an unknown application, release or script, as the stored procedures do", async () => {
    expect(await list("Application_Id=99999")).toEqual([]);
    expect(await list(`Application_Id=${webId}&Release_Number=9.9`)).toEqual([]);
    const res = await get(`/api/json/DatabaseChangeScripts_GetChangeScript?key=${nativeKey}&Script_Id=99999`);
    expect(r.ok(res)).toBeNull();
  });

  it("list newest release first, each release's scripts in creation order, cut by DatabaseChangeScript_Count", async () => {
    const rows = await list(`application_id=${webId}`);
    const releases = rows.map((row) => row.Release_Number);
    expect(releases).toEqual([...releases].sort().reverse());
    const ofOne = rows.filter((row) => row.Release_Number === "1.0").map((row) => row.Script_Id as number);
    expect(ofOne).toEqual([...ofOne].sort((a, b) => a - b));
    expect(await list(`Application_Id=${webId}&DatabaseChangeScript_Count=2`)).toEqual(rows.slice(0, 2));
  });

  it("400 without Application_Id or Script_Id", async () => {
    refused(
      await get(`/api/json/DatabaseChangeScripts_GetChangeScripts?key=${nativeKey}`),
      400,
      "The parameter 'Application_Id' is required.",
    );
    refused(
      await get(`/api/json/DatabaseChangeScripts_GetChangeScript?key=${nativeKey}&Script_Id=abc`),
      400,
      "The parameter 'Script_Id' must be a whole number.",
    );
  });
});

describe("DatabaseChangeScripts_DeleteChangeScript and cascades", () => {
  it("deletes a script (empty 200); an unknown id is no error", async () => {
    const id = await save({ Application_Id: apiId, Release_Number: "1.0", Script_Name: "drop me", Script_Text: "x" });
    for (let i = 0; i < 2; i++) {
      const res = await postJson("/api/json/DatabaseChangeScripts_DeleteChangeScript", {
        API_Key: nativeKey,
        Script_Id: id,
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body).toBe("");
    }
    expect(await one(id)).toBeNull();
  });

  it("scripts go with their release and with their application (no API deletes those yet: SQL as the CLI would)", async () => {
    const otherId = await r.setup("Other");
    await r.release(otherId, "1.0", "Other-pipeline");
    await r.release(otherId, "2.0", "Other-pipeline");
    for (const release of ["1.0", "2.0"]) {
      await save({ Application_Id: otherId, Release_Number: release, Script_Name: "s", Script_Text: "t" });
    }
    await execute(t.database, "DELETE FROM releases WHERE application_id = ? AND number = '1.0'", [otherId]);
    expect((await list(`Application_Id=${otherId}`)).map((row) => row.Release_Number)).toEqual(["2.0"]);
    await execute(t.database, "DELETE FROM applications WHERE id = ?", [otherId]);
    expect(await list(`Application_Id=${otherId}`)).toEqual([]);
    expect(
      await readOne(
        t.database,
        "SELECT count(*) AS n FROM change_scripts s WHERE NOT EXISTS (SELECT 1 FROM releases r WHERE r.id = s.release_id)",
      ),
    ).toEqual({ n: 0 });
  });
});

describe("privileges", () => {
  const listUrl = () => `/api/json/DatabaseChangeScripts_GetChangeScripts?Application_Id=${webId}`;
  const saveBody = () => ({ Application_Id: webId, Release_Number: "1.0", Script_Name: "denied", Script_Text: "x" });

  it("403 with the seed's sentence for a feeds-only key, no key and a bad key; nothing written", async () => {
    const feedsKey = await createSystemKey(t.database, ["feeds"]);
    for (const res of [
      await get(`${listUrl()}&key=${feedsKey}`),
      await get(listUrl()),
      await get(`${listUrl()}&key=not-a-key`),
      await postJson("/api/json/DatabaseChangeScripts_CreateOrUpdateChangeScript", {
        API_Key: feedsKey,
        ...saveBody(),
      }),
      await postJson("/api/json/DatabaseChangeScripts_DeleteChangeScript", { API_Key: feedsKey, Script_Id: 1 }),
    ]) {
      refused(res, 403, PERMISSION_DENIED_MESSAGE);
    }
    expect((await list(`Application_Id=${webId}`)).map((row) => row.Script_Name)).not.toContain("denied");
  });

  it("a user needs Applications_View to read and Releases_Manage to write", async () => {
    const viewer = await createUser(t.database, "script-viewer");
    await grant(t.database, { user: viewer, attributes: ["Applications_View"] });
    const key = await createPersonalKey(t.database, viewer);
    expect((await list(`Application_Id=${webId}`, key)).length).toBeGreaterThan(0);
    refused(
      await postJson("/api/json/DatabaseChangeScripts_CreateOrUpdateChangeScript", { API_Key: key, ...saveBody() }),
      403,
      PERMISSION_DENIED_MESSAGE,
    );
  });
});
