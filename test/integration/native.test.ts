import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  applicationDetailsResultSchema,
  applicationsResultSchema,
  releaseDetailsResultSchema,
} from "../../src/areas/native/schemas.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createPersonalKey, createSystemKey, createUser, grant } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * Native API, application methods (docs/seed-api.md area H; docs/compat.md 5.5, 7.5, 7.7; issue 6 section 4):
 * the Jenkins BuildMaster plugin's calls 1-2 as it sends them, each method's shape, every key
 * transport, and the refusals (403 without the native scope, 404 unknown method, 400 arguments).
 */
let t: TestApp;
let r: ReleasesFixtures;
let nativeKey: string;
let webId: number;
let apiId: number;
let oldId: number;

type Json = Record<string, unknown>;
type Method = InjectOptions["method"];

beforeAll(async () => {
  t = await buildTestApp();
  r = releasesFixtures(t);
  nativeKey = await createSystemKey(t.database, ["native"]);
  webId = await r.setup("Web");
  apiId = await r.setup("Api");
  oldId = await r.setup("Old");
  r.ok(await r.json("POST", "/api/applications/update", { id: oldId, active: false, groupName: "Legacy" }));
  for (const releaseNumber of ["1.0", "2.0"]) {
    r.ok(
      await r.json("POST", "/api/releases/create", {
        applicationId: webId,
        releaseNumber,
        pipelineName: "Web-pipeline",
      }),
    );
  }
  r.ok(await r.json("POST", "/api/releases/builds/create", { applicationId: webId, releaseNumber: "2.0" }));
});
afterAll(async () => t.close());

function get(path: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: "GET", url: path, headers });
}

function postForm(path: string, form: string, method: Method = "POST"): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method,
    url: path,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    payload: form,
  });
}

function postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: "POST",
    url: path,
    headers: { "content-type": "application/json", ...headers },
    payload: JSON.stringify(body),
  });
}

function refused(res: LightMyRequestResponse, status: number, message: string | RegExp): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers["content-type"]).toBe("text/plain");
  if (typeof message === "string") expect(res.body).toBe(message);
  else expect(res.body).toMatch(message);
}

describe("the Jenkins BuildMaster plugin's calls (docs/compat.md 7.5, steps 1-2)", () => {
  it("1: connection test lists at most one application as an array", async () => {
    const res = await get(`/api/json/Applications_GetApplications?API_Key=${nativeKey}&Application_Count=1`);
    const apps = r.ok<Json[]>(res);
    expect(applicationsResultSchema.parse(apps)).toEqual(apps);
    expect(apps).toHaveLength(1);
    expect(apps[0]).toMatchObject({ Application_Id: apiId, Application_Name: "Api", Active_Releases_Count: 0 });
  });

  it("2: one application, read as Applications_Extended[0]", async () => {
    const res = await get(`/api/json/Applications_GetApplication?API_Key=${nativeKey}&Application_Id=${webId}`);
    const body = r.ok<{ Applications_Extended: Json[]; Deployables_Extended: unknown[] }>(res);
    expect(applicationDetailsResultSchema.parse(body)).toEqual(body);
    expect(body.Applications_Extended).toHaveLength(1);
    expect(body.Applications_Extended[0]).toEqual({
      Application_Id: webId,
      Application_Name: "Web",
      BuildNumber_Scheme_Name: "Sequential",
      Active_Releases_Count: 2,
      Active_Indicator: true,
      ShowDeployables_Indicator: false,
    });
    expect(body.Deployables_Extended).toEqual([]);
  });
});

describe("Applications_GetApplications", () => {
  it("lists every application by name with ids as numbers, no nulls, groups when set", async () => {
    const apps = r.ok<Json[]>(await get(`/api/json/Applications_GetApplications?key=${nativeKey}`));
    expect(apps.map((a) => a.Application_Name)).toEqual(["Api", "Old", "Web"]);
    expect(apps.every((a) => typeof a.Application_Id === "number")).toBe(true);
    expect(JSON.stringify(apps)).not.toContain("null");
    expect(apps.find((a) => a.Application_Id === oldId)).toMatchObject({
      ApplicationGroup_Name: "Legacy",
      Active_Indicator: false,
    });
    expect(apps.find((a) => a.Application_Id === webId)).toMatchObject({ Active_Releases_Count: 2 });
    expect(apps[0]).not.toHaveProperty("ApplicationGroup_Id");
  });

  it.each(["N", "n", "false", "False"])("IncludeInactive_Indicator=%s leaves out inactive ones", async (flag) => {
    const apps = r.ok<Json[]>(
      await get(`/api/json/Applications_GetApplications?key=${nativeKey}&IncludeInactive_Indicator=${flag}`),
    );
    expect(apps.map((a) => a.Application_Name)).toEqual(["Api", "Web"]);
  });

  it.each(["Y", "true", "True"])("IncludeInactive_Indicator=%s keeps them", async (flag) => {
    const apps = r.ok<Json[]>(
      await get(`/api/json/Applications_GetApplications?key=${nativeKey}&IncludeInactive_Indicator=${flag}`),
    );
    expect(apps).toHaveLength(3);
  });

  it("refuses arguments of the wrong type with 400", async () => {
    refused(
      await get(`/api/json/Applications_GetApplications?key=${nativeKey}&IncludeInactive_Indicator=maybe`),
      400,
      "The parameter 'IncludeInactive_Indicator' must be Y or N (true or false).",
    );
    refused(
      await get(`/api/json/Applications_GetApplications?key=${nativeKey}&Application_Count=one`),
      400,
      "The parameter 'Application_Count' must be a whole number.",
    );
  });
});

describe("Applications_GetApplication", () => {
  it("gives empty tables for an unknown id, as the stored procedure does", async () => {
    const body = r.ok(await get(`/api/json/Applications_GetApplication?key=${nativeKey}&Application_Id=99999`));
    expect(body).toEqual({ Applications_Extended: [], Deployables_Extended: [] });
  });

  it("400 for a missing or non-numeric Application_Id", async () => {
    refused(
      await get(`/api/json/Applications_GetApplication?key=${nativeKey}`),
      400,
      "The parameter 'Application_Id' is required.",
    );
    refused(
      await get(`/api/json/Applications_GetApplication?key=${nativeKey}&Application_Id=`),
      400,
      "The parameter 'Application_Id' is required.",
    );
    refused(
      await get(`/api/json/Applications_GetApplication?key=${nativeKey}&Application_Id=Web`),
      400,
      "The parameter 'Application_Id' must be a whole number.",
    );
  });

  it("400 for a parameter given twice (query and body)", async () => {
    refused(
      await postForm(
        `/api/json/Applications_GetApplication?Application_Id=${webId}`,
        `key=${nativeKey}&application_id=1`,
      ),
      400,
      /given more than once/,
    );
  });
});

describe("Releases_GetRelease", () => {
  it("returns Releases_Extended and ReleaseDeployables_Extended in PascalCase", async () => {
    const res = await get(`/api/json/Releases_GetRelease?key=${nativeKey}&Application_Id=${webId}&Release_Number=2.0`);
    const body = r.ok<{ Releases_Extended: Json[]; ReleaseDeployables_Extended: unknown[] }>(res);
    expect(releaseDetailsResultSchema.parse(body)).toEqual(body);
    expect(body.ReleaseDeployables_Extended).toEqual([]);
    expect(body.Releases_Extended).toHaveLength(1);
    const [release] = body.Releases_Extended;
    expect(release).toMatchObject({
      Application_Id: webId,
      Application_Name: "Web",
      Release_Number: "2.0",
      Release_Name: "2.0",
      Release_Sequence: 2,
      ReleaseStatus_Name: "Active",
      Pipeline_Name: "Web-pipeline",
      CreatedBy_User_Name: "API",
      Latest_Build_Number: "1",
      Furthest_Build_Number: "1",
    });
    expect(typeof release?.Release_Id).toBe("number");
    expect(typeof release?.Latest_Build_Id).toBe("number");
    expect(Number.isNaN(Date.parse(String(release?.CreatedOn_Date)))).toBe(false);
    expect(release).not.toHaveProperty("CancelledOn_Date");
  });

  it("gives empty tables for an unknown release and 400 without Release_Number", async () => {
    const body = r.ok(
      await get(`/api/json/Releases_GetRelease?key=${nativeKey}&Application_Id=${webId}&Release_Number=9.9`),
    );
    expect(body).toEqual({ Releases_Extended: [], ReleaseDeployables_Extended: [] });
    refused(
      await get(`/api/json/Releases_GetRelease?key=${nativeKey}&Application_Id=${webId}`),
      400,
      "The parameter 'Release_Number' is required.",
    );
  });
});

describe("Releases_CancelRelease", () => {
  it("cancels (BuildMasterAutomation: JSON body, X-ApiKey), visible through /api/releases", async () => {
    await r.release(apiId, "3.0", "Api-pipeline");
    const res = await postJson(
      "/api/json/Releases_CancelRelease",
      { Application_Id: apiId, Release_Number: "3.0", CancelledReason_Text: "superseded" },
      { "x-apikey": nativeKey },
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toBe("");

    const [release] = r.ok<Json[]>(await r.json("GET", `/api/releases?applicationId=${apiId}&releaseNumber=3.0`));
    expect(release).toMatchObject({ status: "canceled", canceledBy: "API" });
    const native = r.ok<{ Releases_Extended: Json[] }>(
      await get(`/api/json/Releases_GetRelease?key=${nativeKey}&Application_Id=${apiId}&Release_Number=3.0`),
    );
    expect(native.Releases_Extended[0]).toMatchObject({ ReleaseStatus_Name: "Canceled", CancelledBy_User_Name: "API" });
    expect(native.Releases_Extended[0]).toHaveProperty("CancelledOn_Date");

    refused(
      await postJson("/api/json/Releases_CancelRelease", {
        API_Key: nativeKey,
        Application_Id: apiId,
        Release_Number: "3.0",
      }),
      409,
      "The release is already canceled.",
    );
  });

  it("takes Reason, a null CancelledReason_Text, and form arguments; 404 for an unknown release", async () => {
    await r.release(apiId, "4.0", "Api-pipeline");
    await r.release(apiId, "5.0", "Api-pipeline");
    const byForm = await postForm(
      "/api/json/releases_cancelrelease",
      `key=${nativeKey}&application_id=${apiId}&release_number=4.0&Reason=old`,
    );
    expect(byForm.statusCode, byForm.body).toBe(200);
    const byJson = await postJson("/api/json/Releases_CancelRelease", {
      API_Key: nativeKey,
      Application_Id: apiId,
      Release_Number: "5.0",
      CancelledReason_Text: null,
    });
    expect(byJson.statusCode, byJson.body).toBe(200);
    const statuses = r
      .ok<Json[]>(await r.json("GET", `/api/releases?applicationId=${apiId}`))
      .map((rel) => [rel.number, rel.status]);
    expect(statuses).toEqual(
      expect.arrayContaining([
        ["4.0", "canceled"],
        ["5.0", "canceled"],
      ]),
    );

    const missing = await postJson("/api/json/Releases_CancelRelease", {
      API_Key: nativeKey,
      Application_Id: apiId,
      Release_Number: "9.9",
    });
    expect(missing.statusCode, missing.body).toBe(404);
    expect(missing.headers["content-type"]).toBe("text/plain");
  });
});

describe("keys and access", () => {
  const url = () => `/api/json/Applications_GetApplication?Application_Id=${webId}`;

  it("accepts the key by every transport", async () => {
    const answers = [
      await get(`${url()}&key=${nativeKey}`),
      await get(`${url()}&API_Key=${nativeKey}`),
      await get(`${url()}&api_key=${nativeKey}`),
      await get(url(), { "x-apikey": nativeKey }),
      await get(url(), basic("api", nativeKey)),
      await postForm("/api/json/Applications_GetApplication", `key=${nativeKey}&Application_Id=${webId}`),
      await postForm("/api/json/Applications_GetApplication", `API_Key=${nativeKey}&Application_Id=${webId}`),
      await postJson("/api/json/Applications_GetApplication", { API_Key: nativeKey, Application_Id: webId }),
      await postJson(
        "/api/json/Applications_GetApplication",
        { Application_Id: String(webId) },
        { "x-apikey": nativeKey },
      ),
      await t.app.inject({ method: "POST", url: `${url()}&key=${nativeKey}` }),
    ];
    for (const res of answers) {
      const body = r.ok<{ Applications_Extended: Json[] }>(res);
      expect(body.Applications_Extended[0]?.Application_Name).toBe("Web");
    }
  });

  it("matches method and argument names case-insensitively", async () => {
    const body = r.ok<{ Applications_Extended: Json[] }>(
      await get(`/api/json/applications_getAPPLICATION?api_key=${nativeKey}&application_id=${webId}`),
    );
    expect(body.Applications_Extended[0]?.Application_Id).toBe(webId);
  });

  it("403 with the seed's sentence for keys without the native scope, bad keys and no key", async () => {
    const releasesKey = await createSystemKey(t.database, ["releases"]);
    const badgesKey = await createSystemKey(t.database, ["ci-badges"]);
    for (const res of [
      await get(`${url()}&key=${releasesKey}`),
      await get(`${url()}&API_Key=${badgesKey}`),
      await postJson("/api/json/Applications_GetApplication", { API_Key: releasesKey, Application_Id: webId }),
      await get(`${url()}&key=not-a-key`),
      await get(url()),
      await postJson("/api/json/Releases_CancelRelease", {
        API_Key: badgesKey,
        Application_Id: webId,
        Release_Number: "1.0",
      }),
    ]) {
      refused(res, 403, PERMISSION_DENIED_MESSAGE);
    }
    const [release] = r.ok<Json[]>(await r.json("GET", `/api/releases?applicationId=${webId}&releaseNumber=1.0`));
    expect(release?.status).toBe("active");
  });

  it("checks a user's attribute per method: Applications_View reads, Releases_Manage cancels", async () => {
    const viewer = await createUser(t.database, "native-viewer");
    await grant(t.database, { user: viewer, attributes: ["Applications_View"] });
    const personal = await createPersonalKey(t.database, viewer);
    r.ok(await get(`${url()}&key=${personal}`));
    refused(
      await postJson("/api/json/Releases_CancelRelease", {
        API_Key: personal,
        Application_Id: webId,
        Release_Number: "1.0",
      }),
      403,
      PERMISSION_DENIED_MESSAGE,
    );
  });

  it("404 with a text message for an unknown method", async () => {
    refused(
      await get(`/api/json/Applications_DeleteEverything?key=${nativeKey}`),
      404,
      "The native API method 'Applications_DeleteEverything' does not exist.",
    );
  });
});
