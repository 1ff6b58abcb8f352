import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import {
  checked,
  type ConfigurationWorld,
  configurationWorld,
  localServer,
  role,
  SEED_DATE,
} from "../helpers/configuration.js";
import { basic, createSystemKey, createUser, grant } from "../helpers/fixtures.js";

/**
 * Native API, Otter methods (docs/compat.md 8.x; issue 14 section 1): servers, roles, environments
 * and configuration status, for entities made through `/api/infrastructure/...` as BuildMaster
 * Automation and InedoCore make them. No secret shows: agent keys, sealed variables, credentials.
 */
let t: TestApp;
let base: string;
let nativeKey: string;
let agentKey: string;
type Row = Record<string, unknown>;

const send = (url: string, payload: unknown) =>
  t.app.inject({
    method: "POST",
    url,
    headers: { "x-apikey": t.adminKey, "content-type": "application/json" },
    payload: JSON.stringify(payload),
  });
const call = (method: string, query = "", key = nativeKey) =>
  t.app.inject({ method: "GET", url: `/api/json/${method}?API_Key=${key}${query}` });

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-native-otter-")));
  t = await buildTestApp({ env: { WHARF_DEPLOY_ROOT: base } });
  nativeKey = await createSystemKey(t.database, ["native"]);
  expect((await send("/api/infrastructure/environments/create/Prod", {})).statusCode).toBe(201);
  expect((await send("/api/infrastructure/environments/create/Test", { active: false })).statusCode).toBe(201);
  expect((await send("/api/infrastructure/roles/create/web", { description: "Web tier" })).statusCode).toBe(201);
  expect((await send("/api/infrastructure/roles/create/db", {})).statusCode).toBe(201);
  const web1 = await send("/api/infrastructure/servers/create/web1", {
    serverType: "local",
    rootPath: path.join(base, "web1"),
    roles: ["web", "db"],
    environments: ["Prod"],
    variables: { dbPassword: { value: "s3cret-value", sensitive: true } },
  });
  expect(web1.statusCode, web1.body).toBe(201);
  const agent = await send("/api/infrastructure/servers/create/agent1", {
    serverType: "agent",
    roles: ["web"],
    active: false,
  });
  expect(agent.statusCode, agent.body).toBe(201);
  agentKey = String(agent.json<Row>().agentKey);
});
afterAll(async () => {
  await t.close();
  await fs.rm(base, { recursive: true, force: true });
});

describe("Servers_GetServers and Servers_GetServer", () => {
  it("lists every server by name, inactive ones unless IncludeInactive_Indicator=N", async () => {
    const res = await call("Servers_GetServers");
    expect(res.statusCode, res.body).toBe(200);
    const rows = res.json<Row[]>();
    expect(rows).toEqual([
      {
        Server_Id: expect.any(Number),
        Server_Name: "agent1",
        ServerType_Code: "agent",
        Active_Indicator: false,
        DriftMode_Code: "reportOnly",
      },
      {
        Server_Id: expect.any(Number),
        Server_Name: "web1",
        ServerType_Code: "local",
        Active_Indicator: true,
        DriftMode_Code: "reportOnly",
      },
    ]);
    const active = (await call("servers_getservers", "&includeinactive_indicator=N")).json<Row[]>();
    expect(active.map((r) => r.Server_Name)).toEqual(["web1"]);
  });

  it("never shows an agent key, its hash, or a sealed variable", async () => {
    for (const method of ["Servers_GetServers", "ServerRoles_GetServerRoles", "ServerConfiguration_GetStatus"]) {
      const body = (await call(method)).body;
      expect(body).not.toContain(agentKey);
      expect(body).not.toContain("s3cret-value");
      expect(body.toLowerCase()).not.toContain("hash");
    }
    const one = (await call("Servers_GetServer", "&Server_Name=agent1")).body;
    expect(one).not.toContain(agentKey);
  });

  it("one server by name or id, with its roles and environments", async () => {
    const byName = (await call("Servers_GetServer", "&Server_Name=WEB1")).json<Row>();
    expect(byName).toMatchObject({
      Servers_Extended: [{ Server_Name: "web1", ServerType_Code: "local" }],
      ServerRoles: [
        { ServerRole_Id: expect.any(Number), ServerRole_Name: "web" },
        { ServerRole_Id: expect.any(Number), ServerRole_Name: "db" },
      ],
      Environments: [{ Environment_Id: expect.any(Number), Environment_Name: "Prod" }],
    });
    const id = (byName.Servers_Extended as Row[])[0]?.Server_Id;
    const byId = (await call("Servers_GetServer", `&Server_Id=${id}`)).json<Row>();
    expect(byId).toEqual(byName);
  });

  it("an unknown server gives empty tables; neither id nor name is 400 naming them", async () => {
    for (const query of ["&Server_Name=nope", "&Server_Id=99999"]) {
      const res = await call("Servers_GetServer", query);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ Servers_Extended: [], ServerRoles: [], Environments: [] });
    }
    const res = await call("Servers_GetServer");
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("'Server_Id' or 'Server_Name'");
  });
});

describe("ServerRoles_GetServerRoles and Environments_GetEnvironments", () => {
  it("roles by name with their description and server count", async () => {
    const rows = (await call("ServerRoles_GetServerRoles")).json<Row[]>();
    expect(rows).toEqual([
      { ServerRole_Id: expect.any(Number), ServerRole_Name: "db", Server_Count: 1 },
      {
        ServerRole_Id: expect.any(Number),
        ServerRole_Name: "web",
        ServerRole_Description: "Web tier",
        Server_Count: 2,
      },
    ]);
  });

  it("environments: the one table BuildMaster shares, inactive ones left out with N", async () => {
    const all = (await call("Environments_GetEnvironments")).json<Row[]>();
    expect(all.map((r) => [r.Environment_Name, r.Active_Indicator])).toEqual([
      ["Prod", true],
      ["Test", false],
    ]);
    const active = (await call("Environments_GetEnvironments", "&IncludeInactive_Indicator=N")).json<Row[]>();
    expect(active.map((r) => r.Environment_Name)).toEqual(["Prod"]);
  });
});

describe("ServerConfiguration_GetStatus", () => {
  it("one server's status (never checked: unknown; inactive: disabled)", async () => {
    const web = (await call("ServerConfiguration_GetStatus", "&Server_Name=web1")).json<Row[]>();
    expect(web).toEqual([{ Entity_Type: "server", Entity_Name: "web1", Status_Code: "unknown" }]);
    const agent = (await call("ServerConfiguration_GetStatus", "&Server_Name=agent1")).json<Row[]>();
    expect(agent[0]?.Status_Code).toBe("disabled");
  });

  it("every server, role and environment when none is named; a role or environment by name", async () => {
    const all = (await call("ServerConfiguration_GetStatus")).json<Row[]>();
    expect(all.map((r) => `${String(r.Entity_Type)}:${String(r.Entity_Name)}`)).toEqual(
      expect.arrayContaining(["server:web1", "server:agent1", "role:web", "role:db", "environment:Prod"]),
    );
    const role = (await call("ServerConfiguration_GetStatus", "&ServerRole_Name=web")).json<Row[]>();
    expect(role).toMatchObject([{ Entity_Type: "role", Entity_Name: "web" }]);
    const env = (await call("ServerConfiguration_GetStatus", "&Environment_Name=prod")).json<Row[]>();
    expect(env).toMatchObject([{ Entity_Type: "environment", Entity_Name: "Prod" }]);
  });

  it("an unknown name gives an empty table; two names are 400", async () => {
    const unknown = await call("ServerConfiguration_GetStatus", "&Server_Name=nope");
    expect(unknown.statusCode).toBe(200);
    expect(unknown.json()).toEqual([]);
    const two = await call("ServerConfiguration_GetStatus", "&Server_Name=web1&ServerRole_Name=web");
    expect(two.statusCode).toBe(400);
  });
});

describe("privileges", () => {
  it("an infrastructure-only key is 403 with the seed's sentence; a user needs Infrastructure_View", async () => {
    const infra = await createSystemKey(t.database, ["infrastructure"]);
    const res = await call("Servers_GetServers", "", infra);
    expect(res.statusCode).toBe(403);
    expect(res.body).toBe(PERMISSION_DENIED_MESSAGE);
    const userId = await createUser(t.database, "ops", "Ops-pass-123");
    const refused = await t.app.inject({
      method: "GET",
      url: "/api/json/Servers_GetServers",
      headers: basic("ops", "Ops-pass-123"),
    });
    expect(refused.statusCode).toBe(403);
    await grant(t.database, { user: userId, attributes: ["Infrastructure_View"] });
    const allowed = await t.app.inject({
      method: "GET",
      url: "/api/json/Servers_GetServers",
      headers: basic("ops", "Ops-pass-123"),
    });
    expect(allowed.statusCode).toBe(200);
  });
});

describe("configuration status and items after a real check", () => {
  let w: ConfigurationWorld;
  beforeAll(async () => {
    w = await configurationWorld();
    await role(w, "site", { items: [{ type: "file", path: "/index.html", content: "<h1>hi</h1>\n" }] });
    await localServer(w, "alpha", { roles: ["site"] });
    await checked(w, "alpha");
  });
  afterAll(async () => w?.close());

  it("ServerConfiguration_GetStatus and _GetItems show the drift the check found", async () => {
    const key = await createSystemKey(w.t.database, ["native"]);
    const get = (method: string, query: string) =>
      w.t.app.inject({ method: "GET", url: `/api/json/${method}?API_Key=${key}${query}` });
    const status = (await get("ServerConfiguration_GetStatus", "&Server_Name=alpha")).json<Row[]>();
    expect(status).toEqual([
      {
        Entity_Type: "server",
        Entity_Name: "alpha",
        Status_Code: "drifted",
        Collection_Date: expect.stringMatching(SEED_DATE),
        LatestCollection_Id: expect.any(Number),
      },
    ]);
    const items = (await get("ServerConfiguration_GetItems", "&Server_Name=ALPHA")).json<Row[]>();
    expect(items).toEqual([
      {
        Item_Type: "file",
        Item_Key: "/index.html",
        Status_Code: "drifted",
        Collection_Date: status[0]?.Collection_Date,
        Collection_Id: status[0]?.LatestCollection_Id,
        CollectionRole_Name: "site",
      },
    ]);
    expect((await get("ServerConfiguration_GetItems", "&Server_Name=nope")).json()).toEqual([]);
    const missing = await get("ServerConfiguration_GetItems", "");
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("'Server_Name'");
  });
});
