import type { AddressInfo } from "node:net";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import type { LightMyRequestResponse } from "fastify";
import { type Client, createClientAsync } from "soap";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NATIVE_METHODS } from "../../src/areas/native/index.js";
import { SOAP_NAMESPACE } from "../../src/areas/native/soap-namespace.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * SOAP at /api/soap (issue 14 section 2): the WSDL generated from the registry, calls through the
 * npm `soap` client reading that WSDL from the live server (SOAP 1.1 and 1.2), hand-written
 * envelopes, faults with the JSON transport's sentences and SOAP's statuses, and hostile XML
 * (entities, DTDs, depth, size) refused fast, never a 500 but as a fault.
 */
let t: TestApp;
let r: ReleasesFixtures;
let url: string;
let nativeKey: string;
let webId: number;

const SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/";
const SOAP12 = "http://www.w3.org/2003/05/soap-envelope";

beforeAll(async () => {
  t = await buildTestApp();
  r = releasesFixtures(t);
  nativeKey = await createSystemKey(t.database, ["native"]);
  webId = await r.setup("Web");
  await r.setup("Api");
  r.ok(await r.json("POST", "/api/applications/update", { id: webId, description: 'Tom & "Jerry" <b>' }));
  r.ok(
    await r.json("POST", "/api/releases/create", {
      applicationId: webId,
      releaseNumber: "1.0",
      pipelineName: "Web-pipeline",
    }),
  );
  await t.app.listen({ host: "127.0.0.1", port: 0 });
  url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => t.close());

type Xml = Record<string, unknown>;
/** Children of a node parsed with every element as an array. */
const all = (node: Xml, name: string) => (node[name] ?? []) as Xml[];
const one = (node: Xml, name: string) => all(node, name)[0] as Xml;
const reader = new XMLParser({ ignoreAttributes: false, removeNSPrefix: true, parseTagValue: false });

function envelope11(body: string, header = ""): string {
  return `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${SOAP11}"><soap:Header>${header}</soap:Header><soap:Body>${body}</soap:Body></soap:Envelope>`;
}

function envelope12(body: string): string {
  return `<?xml version="1.0" encoding="utf-8"?><env:Envelope xmlns:env="${SOAP12}"><env:Body>${body}</env:Body></env:Envelope>`;
}

function call(method: string, args: Record<string, string>): string {
  const elements = Object.entries(args)
    .map(([name, value]) => `<${name}>${value}</${name}>`)
    .join("");
  return `<${method} xmlns="${SOAP_NAMESPACE}">${elements}</${method}>`;
}

function post11(payload: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: "POST",
    url: "/api/soap",
    headers: { "content-type": "text/xml; charset=utf-8", ...headers },
    payload,
  });
}

function post12(payload: string, action?: string): Promise<LightMyRequestResponse> {
  const type = `application/soap+xml; charset=utf-8${action === undefined ? "" : `; action="${action}"`}`;
  return t.app.inject({ method: "POST", url: "/api/soap", headers: { "content-type": type }, payload });
}

function bodyOf(res: LightMyRequestResponse): Xml {
  expect(XMLValidator.validate(res.body), res.body).toBe(true);
  const document = reader.parse(res.body) as { Envelope: { Body: Xml } };
  return document.Envelope.Body;
}

function fault11(res: LightMyRequestResponse, code: string): string {
  expect(res.statusCode, res.body).toBe(500);
  expect(res.headers["content-type"]).toBe("text/xml; charset=utf-8");
  const fault = bodyOf(res).Fault as Xml;
  expect(fault.faultcode).toBe(`soap:${code}`);
  return fault.faultstring as string;
}

describe("GET /api/soap: the WSDL", () => {
  it.each(["/api/soap", "/api/soap?wsdl", "/api/soap?WSDL"])("%s is a well-formed WSDL, public", async (path) => {
    const res = await t.app.inject({ method: "GET", url: path, headers: { host: "wharf.example:8624" } });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/xml; charset=utf-8");
    expect(XMLValidator.validate(res.body)).toBe(true);
    expect(res.body).toContain('location="http://wharf.example:8624/api/soap"');
  });

  it("has every registry method: request with API_Key first, response, both bindings", async () => {
    const res = await t.app.inject({ method: "GET", url: "/api/soap?wsdl" });
    const wsdl = new XMLParser({
      ignoreAttributes: false,
      removeNSPrefix: true,
      isArray: (_n, _p, _l, isAttribute) => !isAttribute,
    }).parse(res.body);
    const definitions = one(wsdl, "definitions");
    const elements = all(one(one(definitions, "types"), "schema"), "element");
    const named = (name: string) => elements.find((e) => e["@_name"] === name);
    const bindings = all(definitions, "binding");
    expect(bindings.map((b) => b["@_name"])).toEqual(["NativeApiSoap", "NativeApiSoap12"]);
    for (const method of NATIVE_METHODS) {
      const request = named(method.name);
      expect(request, method.name).toBeDefined();
      const sequence = all(one(one(request as Xml, "complexType"), "sequence"), "element");
      expect(sequence.map((e) => e["@_name"])).toEqual(["API_Key", ...method.parameters.map((p) => p.name)]);
      method.parameters.forEach((parameter, index) => {
        const declared = sequence[index + 1] as Xml;
        const types = { integer: "xs:int", string: "xs:string", indicator: "xs:boolean" };
        expect(declared["@_type"]).toBe(types[parameter.type]);
        expect(declared["@_minOccurs"]).toBe(parameter.required ? "1" : "0");
      });
      expect(named(`${method.name}Response`), method.name).toBeDefined();
      for (const binding of bindings) {
        const operation = all(binding, "operation").find((o) => o["@_name"] === method.name);
        expect(operation, `${method.name} in ${String(binding["@_name"])}`).toBeDefined();
      }
    }
  });

  it("says the address the proxy shows", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: "/api/soap",
      headers: { "x-forwarded-proto": "https", "x-forwarded-host": "packages.example" },
    });
    expect(res.body).toContain('location="https://packages.example/api/soap"');
  });
});

describe("the npm soap client, reading the WSDL from the live server", () => {
  let client: Client;
  let client12: Client;
  beforeAll(async () => {
    client = await createClientAsync(`${url}/api/soap?wsdl`, { disableCache: true });
    client12 = await createClientAsync(`${url}/api/soap?wsdl`, { disableCache: true, forceSoap12Headers: true });
  });

  async function json<T>(path: string): Promise<T> {
    return r.ok<T>(await t.app.inject({ method: "GET", url: `/api/json/${path}&key=${nativeKey}` }));
  }

  it("calls Applications_GetApplications: the same rows as JSON, XML special characters intact", async () => {
    const [result] = (await client.Applications_GetApplicationsAsync({ API_Key: nativeKey })) as [Xml];
    const rows = (result.Applications_GetApplicationsResult as Xml).Row as Xml[];
    expect(rows).toHaveLength(2);
    expect(rows).toEqual(await json("Applications_GetApplications?IncludeInactive_Indicator=Y"));
    expect(rows.find((row) => row.Application_Id === webId)?.Application_Description).toBe('Tom & "Jerry" <b>');
  });

  it("passes optional arguments (an xs:int and an xs:boolean)", async () => {
    const [result] = (await client.Applications_GetApplicationsAsync({
      API_Key: nativeKey,
      Application_Count: 1,
      IncludeInactive_Indicator: false,
    })) as [Xml];
    const row = (result.Applications_GetApplicationsResult as Xml).Row;
    // One row is still an array: the WSDL says rows are maxOccurs=unbounded.
    expect(row).toEqual([expect.objectContaining({ Application_Name: "Api", Active_Indicator: true })]);
  });

  it("calls Applications_GetApplication: nested tables as in JSON", async () => {
    const [result] = (await client.Applications_GetApplicationAsync({ API_Key: nativeKey, Application_Id: webId })) as [
      Xml,
    ];
    const details = result.Applications_GetApplicationResult as Xml;
    const expected = (
      await json<{ Applications_Extended: Xml[] }>(`Applications_GetApplication?Application_Id=${webId}`)
    ).Applications_Extended;
    expect((details.Applications_Extended as Xml).Row).toEqual(expected);
  });

  it("calls Releases_GetRelease over SOAP 1.2", async () => {
    const [result, raw] = (await client12.Releases_GetReleaseAsync({
      API_Key: nativeKey,
      Application_Id: webId,
      Release_Number: "1.0",
    })) as [Xml, string];
    expect(raw).toContain(SOAP12);
    const rows = ((result.Releases_GetReleaseResult as Xml).Releases_Extended as Xml).Row as Xml[];
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ Application_Id: webId, Release_Number: "1.0", ReleaseStatus_Name: "Active" });
  });

  it("gets a refused key as a fault with the seed's sentence", async () => {
    const error = await client.Applications_GetApplicationsAsync({ API_Key: "not-a-key" }).catch((e: unknown) => e);
    const fault = (error as { root?: { Envelope?: { Body?: { Fault?: Xml } } } }).root?.Envelope?.Body?.Fault;
    expect(fault).toMatchObject({ faultcode: "soap:Client", faultstring: PERMISSION_DENIED_MESSAGE });
  });

  it("gets a missing argument as a fault naming it (SOAP 1.2: Sender, HTTP 400)", async () => {
    const error = (await client12
      .Applications_GetApplicationAsync({ API_Key: nativeKey })
      .catch((e: unknown) => e)) as {
      response?: { status?: number };
      body?: string;
    };
    expect(error.response?.status).toBe(400);
    expect(error.body).toContain("The parameter 'Application_Id' is required.");
  });
});

describe("hand-written envelopes", () => {
  it("SOAP 1.1 with SOAPAction: rows in the service namespace", async () => {
    const res = await post11(envelope11(call("Applications_GetApplications", { API_Key: nativeKey })), {
      soapaction: `"${SOAP_NAMESPACE}Applications_GetApplications"`,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("text/xml; charset=utf-8");
    expect(res.body).toContain(`<Applications_GetApplicationsResponse xmlns="${SOAP_NAMESPACE}">`);
    const response = bodyOf(res).Applications_GetApplicationsResponse as Xml;
    const rows = (response.Applications_GetApplicationsResult as Xml).Row as Xml[];
    expect(rows.map((row) => row.Application_Name)).toEqual(["Api", "Web"]);
    expect(res.body).toContain('<Application_Description>Tom &amp; "Jerry" &lt;b&gt;</Application_Description>');
  });

  it("SOAP 1.2 with the action parameter", async () => {
    const res = await post12(
      envelope12(call("Applications_GetApplication", { API_Key: nativeKey, Application_Id: String(webId) })),
      `${SOAP_NAMESPACE}Applications_GetApplication`,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("application/soap+xml; charset=utf-8");
    expect(res.body).toContain(`xmlns:soap="${SOAP12}"`);
    const result = (bodyOf(res).Applications_GetApplicationResponse as Xml).Applications_GetApplicationResult as Xml;
    expect((result.Applications_Extended as Xml).Row).toMatchObject({ Application_Name: "Web" });
  });

  it("names match case-insensitively, the key may come in X-ApiKey, xsi:nil and empty mean absent", async () => {
    const body =
      `<applications_getapplications xmlns="${SOAP_NAMESPACE}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
      `<application_count xsi:nil="true"/><IncludeInactive_Indicator></IncludeInactive_Indicator></applications_getapplications>`;
    const res = await post11(envelope11(body), { "x-apikey": nativeKey });
    expect(res.statusCode, res.body).toBe(200);
    const response = bodyOf(res).Applications_GetApplicationsResponse as Xml;
    expect((response.Applications_GetApplicationsResult as Xml).Row).toHaveLength(2);
  });

  it("a method that returns nothing answers an empty response element", async () => {
    r.ok(
      await r.json("POST", "/api/releases/create", {
        applicationId: webId,
        releaseNumber: "9.0",
        pipelineName: "Web-pipeline",
      }),
    );
    const args = { API_Key: nativeKey, Application_Id: String(webId), Release_Number: "9.0", Reason: "a &lt; b" };
    const res = await post11(envelope11(call("Releases_CancelRelease", args)));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain(`<Releases_CancelReleaseResponse xmlns="${SOAP_NAMESPACE}"/>`);
    const [release] = (
      await t.app.inject({
        method: "GET",
        url: `/api/json/Releases_GetRelease?key=${nativeKey}&Application_Id=${webId}&Release_Number=9.0`,
      })
    ).json<{ Releases_Extended: Xml[] }>().Releases_Extended;
    expect(release).toMatchObject({ ReleaseStatus_Name: "Canceled" });
  });
});

describe("faults", () => {
  const getApplication = (args: Record<string, string>) => envelope11(call("Applications_GetApplication", args));

  it("unknown method: soap:Client, 500 (SOAP 1.1); Sender, 400 (SOAP 1.2)", async () => {
    const message = "The native API method 'Applications_Nope' does not exist.";
    expect(fault11(await post11(envelope11(call("Applications_Nope", { API_Key: nativeKey }))), "Client")).toBe(
      message,
    );
    const res = await post12(envelope12(call("Applications_Nope", { API_Key: nativeKey })));
    expect(res.statusCode).toBe(400);
    expect(res.headers["content-type"]).toBe("application/soap+xml; charset=utf-8");
    expect(res.headers["x-wharf-error"]).toBe("UNKNOWN_NATIVE_METHOD");
    const fault = bodyOf(res).Fault as Xml;
    expect((fault.Code as Xml).Value).toBe("soap:Sender");
    expect(((fault.Reason as Xml).Text as Xml)["#text"]).toBe(message);
  });

  it("missing and bad arguments name the parameter", async () => {
    expect(fault11(await post11(getApplication({ API_Key: nativeKey })), "Client")).toBe(
      "The parameter 'Application_Id' is required.",
    );
    expect(fault11(await post11(getApplication({ API_Key: nativeKey, Application_Id: "x1" })), "Client")).toBe(
      "The parameter 'Application_Id' must be a whole number.",
    );
    const twice = `<Applications_GetApplication><Application_Id>1</Application_Id><application_id>2</application_id></Applications_GetApplication>`;
    expect(fault11(await post11(envelope11(twice), { "x-apikey": nativeKey }), "Client")).toBe(
      "The parameter 'application_id' is given more than once.",
    );
    const nested = `<Applications_GetApplication><Application_Id><a>1</a></Application_Id></Applications_GetApplication>`;
    expect(fault11(await post11(envelope11(nested), { "x-apikey": nativeKey }), "Client")).toBe(
      "The parameter 'Application_Id' must be a single value.",
    );
  });

  it("a bad key, no key, or a key without the native scope: the seed's sentence", async () => {
    const bad = await post11(getApplication({ API_Key: "nope", Application_Id: "1" }));
    expect(fault11(bad, "Client")).toBe(PERMISSION_DENIED_MESSAGE);
    expect(bad.headers["x-wharf-error"]).toBe("PERMISSION_DENIED");
    expect(fault11(await post11(getApplication({ Application_Id: "1" })), "Client")).toBe(PERMISSION_DENIED_MESSAGE);
    const feedsOnly = await createSystemKey(t.database, ["feeds"]);
    expect(fault11(await post11(getApplication({ API_Key: feedsOnly, Application_Id: "1" })), "Client")).toBe(
      PERMISSION_DENIED_MESSAGE,
    );
  });

  it("a SOAPAction naming another method", async () => {
    const res = await post11(getApplication({ API_Key: nativeKey, Application_Id: "1" }), {
      soapaction: `"${SOAP_NAMESPACE}Releases_CancelRelease"`,
    });
    expect(fault11(res, "Client")).toBe(
      "The SOAP action names 'Releases_CancelRelease' but the envelope calls 'Applications_GetApplication'.",
    );
  });

  it("a SOAP 1.2 envelope sent as SOAP 1.1: VersionMismatch", async () => {
    const res = await post11(envelope12(call("Applications_GetApplications", { API_Key: nativeKey })));
    expect(fault11(res, "VersionMismatch")).toMatch(/It is a SOAP 1\.2 envelope: send it as application\/soap\+xml\./);
  });

  it("a header that must be understood: MustUnderstand", async () => {
    const header = `<Security xmlns="urn:x" soap:mustUnderstand="1"/>`;
    const res = await post11(envelope11(call("Applications_GetApplications", { API_Key: nativeKey }), header));
    expect(fault11(res, "MustUnderstand")).toBe(
      "The header 'Security' must be understood, and this service does not know it.",
    );
  });

  it("not an envelope, not XML, not a SOAP media type", async () => {
    expect(fault11(await post11("<hello/>"), "Client")).toBe(
      "The body is not a SOAP envelope: its root element must be Envelope.",
    );
    expect(fault11(await post11("<soap:Envelope xmlns:soap='x'><soap:Body>"), "Client")).toMatch(
      /^The envelope is not well-formed XML: /,
    );
    expect(fault11(await post11(envelope11("")), "Client")).toBe("The envelope's Body holds no method element.");
    expect(fault11(await post11(""), "Client")).toBe("The request has no body: send a SOAP envelope.");
    const json = await t.app.inject({ method: "POST", url: "/api/soap", payload: { API_Key: nativeKey } });
    expect(json.statusCode).toBe(415);
    expect(json.headers["x-wharf-error"]).toBe("SOAP_MEDIA_TYPE");
  });
});

describe("hostile XML: refused fast, as a fault or 413, never a 500", () => {
  const getApplications = call("Applications_GetApplications", { API_Key: nativeKey });

  async function refusedFast(payload: string, headers: Record<string, string> = {}) {
    const started = performance.now();
    const res = await post11(payload, headers);
    const elapsed = performance.now() - started;
    // A bound for a parser that expands or backtracks (seconds to minutes), not a speed figure:
    // a 512 KiB envelope took 573 ms on a CI machine under a load of 14, tens of ms when quiet.
    expect(elapsed, `${elapsed} ms`).toBeLessThan(2_000);
    return res;
  }

  it("billion laughs: the DOCTYPE is refused before any entity is read", async () => {
    const entities = Array.from({ length: 10 }, (_, i) =>
      i === 0 ? '<!ENTITY lol0 "lol">' : `<!ENTITY lol${i} "${`&lol${i - 1};`.repeat(10)}">`,
    ).join("");
    const payload = `<?xml version="1.0"?><!DOCTYPE lolz [${entities}]>${envelope11(call("Applications_GetApplication", { API_Key: nativeKey, Application_Id: "&lol9;" })).replace(/^<\?xml[^>]*>/, "")}`;
    const res = await refusedFast(payload);
    expect(fault11(res, "Client")).toMatch(/^The envelope holds a document type declaration/);
    expect(res.headers["x-wharf-error"]).toBe("SOAP_DTD_REFUSED");
  });

  it("external entities: refused, nothing read from disk", async () => {
    const payload = `<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${envelope11(call("Releases_GetRelease", { API_Key: nativeKey, Application_Id: String(webId), Release_Number: "&xxe;" }))}`;
    const res = await refusedFast(payload);
    expect(res.headers["x-wharf-error"]).toBe("SOAP_DTD_REFUSED");
    expect(res.body).not.toContain("root:");
  });

  it("an entity never declared, a character XML does not allow, a processing instruction", async () => {
    const undeclared = await refusedFast(
      envelope11(call("Applications_GetApplication", { API_Key: nativeKey, Application_Id: "&xxe;" })),
    );
    expect(fault11(undeclared, "Client")).toMatch(/^The envelope refers to the entity &xxe; which is not declared/);
    // A name an object has by inheritance is no entity either.
    const inherited = await refusedFast(
      envelope11(call("Applications_GetApplication", { API_Key: nativeKey, Application_Id: "&constructor;" })),
    );
    expect(inherited.headers["x-wharf-error"]).toBe("SOAP_UNKNOWN_ENTITY");
    const control = await refusedFast(
      envelope11(call("Applications_GetApplication", { API_Key: nativeKey, Application_Id: "&#1;" })),
    );
    expect(control.headers["x-wharf-error"]).toBe("SOAP_MALFORMED");
    const pi = await refusedFast(envelope11(`<?php system("id"); ?>${getApplications}`));
    expect(pi.headers["x-wharf-error"]).toBe("SOAP_PI_REFUSED");
  });

  it("deep nesting and many elements, within the pre-auth size and with the key in a header (up to 1 MiB)", async () => {
    const nested = (levels: number) => envelope11(`${"<a>".repeat(levels)}${"</a>".repeat(levels)}`);
    const deep = await refusedFast(nested(5_000));
    expect(fault11(deep, "Client")).toBe("The envelope nests elements more than 32 levels deep.");
    const deeper = await refusedFast(nested(140_000), { "x-apikey": nativeKey });
    expect(fault11(deeper, "Client")).toBe("The envelope nests elements more than 32 levels deep.");
    const elements = (count: number) =>
      envelope11(getApplications.replace("</Applications_", `${"<x/>".repeat(count)}</Applications_`));
    const wide = await refusedFast(elements(5_000));
    expect(fault11(wide, "Client")).toBe("The envelope holds more than 1000 elements.");
    const wider = await refusedFast(elements(250_000), { "x-apikey": nativeKey });
    expect(fault11(wider, "Client")).toBe("The envelope holds more than 1000 elements.");
  });

  it("names the parser refuses (__proto__) are a fault too", async () => {
    const res = await refusedFast(
      envelope11(
        getApplications.replace(
          "</Applications_GetApplications>",
          "<__proto__>1</__proto__></Applications_GetApplications>",
        ),
      ),
    );
    expect(res.headers["x-wharf-error"]).toBe("SOAP_MALFORMED");
  });

  it("a huge envelope from a sender not yet known: 413 before the key inside is looked for", async () => {
    const huge = envelope11(
      call("Applications_GetApplications", { API_Key: nativeKey, Padding: "x".repeat(2 * 1024 * 1024) }),
    );
    const res = await refusedFast(huge);
    expect(res.statusCode).toBe(413);
    expect(res.headers["x-wharf-error"]).toBe("PRE_AUTH_BODY_TOO_LARGE");
    expect(res.headers["content-type"]).toBe("text/xml; charset=utf-8");
    expect((bodyOf(res).Fault as Xml).faultcode).toBe("soap:Client");
  });

  it("a key in a header allows a larger envelope, up to 1 MiB", async () => {
    const padded = (bytes: number) =>
      envelope11(
        getApplications.replace(
          "</Applications_GetApplications>",
          `<Padding>${"x".repeat(bytes)}</Padding></Applications_GetApplications>`,
        ),
      );
    const fits = await refusedFast(padded(512 * 1024), { "x-apikey": nativeKey });
    expect(fits.statusCode, fits.body.slice(0, 300)).toBe(200);
    const tooLarge = await refusedFast(padded(2 * 1024 * 1024), { "x-apikey": nativeKey });
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.headers["x-wharf-error"]).toBe("BODY_TOO_LARGE");
    expect((bodyOf(tooLarge).Fault as Xml).faultstring).toBe(
      "The envelope is larger than the 1048576 bytes this service reads.",
    );
  });
});

describe("every method in the registry, whoever declared it", () => {
  const placeholder = { integer: "999999", string: "none", indicator: "N" } as const;

  it.each(NATIVE_METHODS.map((method) => [method.name, method] as const))(
    "%s: answers over SOAP what JSON answers (reads), never a server fault",
    async (name, method) => {
      const args = Object.fromEntries(
        method.parameters.filter((p) => p.required).map((p) => [p.name, placeholder[p.type]]),
      );
      const res = await post11(envelope11(call(name, { API_Key: nativeKey, ...args })));
      expect(XMLValidator.validate(res.body), res.body).toBe(true);
      if (res.statusCode === 200) {
        expect(bodyOf(res)).toHaveProperty(`${name}Response`);
      } else {
        fault11(res, "Client");
      }
      if (!/_Get/.test(name)) return;
      const query = new URLSearchParams({ key: nativeKey, ...args });
      const json = await t.app.inject({ method: "GET", url: `/api/json/${name}?${query.toString()}` });
      expect(res.statusCode === 200, res.body).toBe(json.statusCode === 200);
      if (json.statusCode !== 200) expect((bodyOf(res).Fault as Xml).faultstring).toBe(json.body);
    },
  );

  it("the npm soap client sees every method in the WSDL", async () => {
    const client = await createClientAsync(`${url}/api/soap?wsdl`, { disableCache: true });
    const described = client.describe() as Record<string, Record<string, Record<string, unknown>>>;
    const operations = Object.keys(described.NativeApi?.NativeApiSoap ?? {});
    expect(operations).toEqual(NATIVE_METHODS.map((method) => method.name));
  });
});

describe("WHARF_BASE_URL", () => {
  it("is the service address in the WSDL when set", async () => {
    const configured = await buildTestApp({ env: { WHARF_BASE_URL: "https://wharf.example/base/" } });
    try {
      const res = await configured.app.inject({ method: "GET", url: "/api/soap?wsdl", headers: { host: "other:1" } });
      expect(res.body).toContain('location="https://wharf.example/base/api/soap"');
      expect(res.body).not.toContain("other:1");
    } finally {
      await configured.close();
    }
  });
});

describe("text XML cannot carry", () => {
  it("control characters in stored values become U+FFFD, the answer stays well-formed", async () => {
    const id = await r.setup("Ctl");
    r.ok(await r.json("POST", "/api/applications/update", { id, description: "bell\u0007 and nul\u0000" }));
    const args = { API_Key: nativeKey, Application_Id: String(id) };
    const res = await post11(envelope11(call("Applications_GetApplication", args)));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain("<Application_Description>bell\uFFFD and nul\uFFFD</Application_Description>");
  });
});
