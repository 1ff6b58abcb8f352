import formbody from "@fastify/formbody";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { forbidden } from "../../src/domain/errors.js";
import type { AccessNeed, Principal } from "../../src/domain/principal.js";
import { type Authenticator, registerAuthentication } from "../../src/http/auth.js";
import { registerBodyParsers } from "../../src/http/body-parsers.js";
import { registerErrorHandling } from "../../src/http/errors.js";

/**
 * The authentication hook on its own, with a fake authenticator: one key "good" that may do
 * everything, so that these tests speak only of the hook's choreography.
 */
const fakeAuthenticator: Authenticator = {
  async authenticate(credentials) {
    if (credentials.kind !== "password" && credentials.key === "good")
      return { type: "system-key", keyId: 1, apis: ["full-control"] };
    throw forbidden();
  },
  async allows(principal: Principal, _need: AccessNeed) {
    return principal.type === "system-key";
  },
  // The hook never asks this: only the hot download path does (hot-downloads.test.ts).
  allowsFromMemory: () => false,
};

describe("authentication hook", () => {
  let app: FastifyInstance;
  let handled: string[];

  async function build(): Promise<FastifyInstance> {
    handled = [];
    app = Fastify();
    registerErrorHandling(app);
    registerBodyParsers(app);
    await app.register(formbody);
    registerAuthentication(app, fakeAuthenticator);
    app.get("/undeclared", async () => {
      handled.push("undeclared");
      return "open";
    });
    app.get("/public", { config: { access: { public: true } } }, async () => "ok");
    app.post("/upload", { config: { access: { need: { attribute: "Feeds_AddPackage" } } } }, async (request) => {
      handled.push("upload");
      let bytes = 0;
      for await (const chunk of request.body as AsyncIterable<Buffer>) bytes += chunk.length;
      return { bytes };
    });
    app.post("/form", { config: { access: { need: { attribute: "Admin_ConfigureProGet" } } } }, async (request) => {
      handled.push("form");
      return { body: request.body };
    });
    await app.ready();
    return app;
  }

  afterEach(async () => app?.close());

  it("denies a route that declares no access, to everyone", async () => {
    await build();
    for (const headers of [{}, { "x-apikey": "good" }]) {
      const res = await app.inject({ method: "GET", url: "/undeclared", headers });
      expect([401, 403]).toContain(res.statusCode);
    }
    expect(handled).toEqual([]);
  });

  it("lets anyone reach a public route, even with a bad key", async () => {
    await build();
    const res = await app.inject({ method: "GET", url: "/public", headers: { "x-apikey": "bad" } });
    expect(res.statusCode).toBe(200);
  });

  it("refuses an unauthorised upload before its body is read", async () => {
    await build();
    const res = await app.inject({
      method: "POST",
      url: "/upload",
      headers: { "content-type": "application/zip", "x-apikey": "bad" },
      payload: Buffer.alloc(1024),
    });
    expect(res.statusCode).toBe(403);
    expect(handled).toEqual([]);
    const anonymous = await app.inject({ method: "POST", url: "/upload", payload: Buffer.alloc(10) });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers["www-authenticate"]).toBe('Basic realm="Wharf"');
    expect(handled).toEqual([]);
  });

  it("streams an authorised upload with no Content-Type to the route", async () => {
    await build();
    const res = await app.inject({ method: "POST", url: "/upload?key=good", payload: Buffer.alloc(5000) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ bytes: 5000 });
  });

  it("takes a key from a form field or a JSON API_Key, and removes it from the body", async () => {
    await build();
    const form = await app.inject({
      method: "POST",
      url: "/form",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "Key=good&name=x",
    });
    expect(form.statusCode).toBe(200);
    expect(form.json()).toEqual({ body: { name: "x" } });
    const json = await app.inject({
      method: "POST",
      url: "/form",
      payload: { api_key: "good", name: "y", key: "data" },
    });
    expect(json.statusCode).toBe(200);
    expect(json.json()).toEqual({ body: { name: "y", key: "data" } });
    const jsonKeyIsData = await app.inject({ method: "POST", url: "/form", payload: { key: "good" } });
    expect(jsonKeyIsData.statusCode).toBe(401);
    const bad = await app.inject({ method: "POST", url: "/form", payload: { API_Key: "bad", name: "z" } });
    expect(bad.statusCode).toBe(403);
    expect(handled).toEqual(["form", "form"]);
  });

  it("treats an empty JSON body as no body", async () => {
    await build();
    const res = await app.inject({
      method: "POST",
      url: "/form?key=good",
      headers: { "content-type": "application/json" },
    });
    expect(res.statusCode).toBe(200);
  });

  it("answers malformed JSON with a plain-text 400", async () => {
    await build();
    const res = await app.inject({
      method: "POST",
      url: "/form?key=good",
      headers: { "content-type": "application/json" },
      payload: "{not json",
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers["content-type"]).toBe("text/plain");
  });
});
