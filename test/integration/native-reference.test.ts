import Fastify, { type FastifyInstance, type LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { NATIVE_METHODS } from "../../src/areas/native/index.js";
import { escapeHtml } from "../../src/areas/native/reference-html.js";
import { createNativeRegistry, defineNativeMethod, type NativeMethod } from "../../src/areas/native/registry.js";
import { SOAP_NAMESPACE } from "../../src/areas/native/soap-namespace.js";
import { registerReferenceRoutes } from "../../src/areas/web-ui/reference/pages.js";
import { registerUiSecurity } from "../../src/areas/web-ui/session/ui-security.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";

/**
 * The native API reference (issue 14 section 3; docs/seed-api.md area H): `/reference/api` and
 * `/reference/api/<Method>` generated from the registry, so every method of NATIVE_METHODS (whoever
 * added it) is checked here without being named; the web UI's headers (the pages are in its frame,
 * web-ui/reference); escaping proved on a hand-made registry with hostile names and descriptions.
 */
let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t.close());

function get(app: FastifyInstance, url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return app.inject({ method: "GET", url, headers });
}

/** Every property name anywhere in a result schema, read straight from its JSON Schema. */
function propertyNames(schema: z.ZodType | undefined): string[] {
  if (schema === undefined) return [];
  const names: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === "object") {
      const record = node as Record<string, unknown>;
      const properties = record.properties;
      if (properties !== null && typeof properties === "object") names.push(...Object.keys(properties));
      Object.values(record).forEach(walk);
    }
  };
  walk(z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }));
  return [...new Set(names)];
}

/** The page's text with <code> marks removed: summaries and descriptions show their `backticks` as code. */
function withoutCode(body: string): string {
  return body.replace(/<\/?code>/g, "");
}

/** How a summary or description reads once its `backticks` are code. */
function shown(text: string): string {
  return escapeHtml(text.replaceAll("`", ""));
}

function method(name: string): NativeMethod {
  const found = NATIVE_METHODS.find((m) => m.name === name);
  if (found === undefined) throw new Error(`no method ${name}`);
  return found;
}

/** The binder's refusal (arguments.ts) names a declared required parameter the example left out. */
function expectRequiredArgumentsGiven(method: NativeMethod, body: string): void {
  for (const parameter of method.parameters.filter((p) => p.required)) {
    expect(body).not.toMatch(new RegExp(`The parameter (?:'|&apos;)${parameter.name}(?:'|&apos;) is required`));
  }
}

function expectPageHeaders(res: LightMyRequestResponse): void {
  expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
  expect(res.headers["x-content-type-options"]).toBe("nosniff");
  // The web UI's policy: its own stylesheet and script only, nothing inline.
  const csp = String(res.headers["content-security-policy"]);
  expect(csp).toMatch(/^default-src 'self';/);
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
}

/** The reference's own content, inside the frame (the frame itself links the UI's stylesheet and script). */
function contentOf(body: string): string {
  const content = /<div class="reference">([\s\S]*)<\/div>\s*<\/main>/.exec(body)?.[1];
  expect(content, body).toBeDefined();
  return content ?? "";
}

/** The frame's one stylesheet and script, nothing inline. */
function expectFrame(body: string): void {
  expect(body).toMatch(/^<!doctype html>\n<html lang="en">/);
  expect(body).toMatch(/<link rel="stylesheet" href="\/ui\/style\.css\?v=[0-9a-f]+">/);
  expect(body).not.toMatch(/<style\b/i);
  expect([...body.matchAll(/<script\b[^>]*>/gi)].map((m) => m[0])).toEqual([
    expect.stringMatching(/^<script src="\/ui\/app\.js\?v=[0-9a-f]+" defer>$/),
  ]);
}

/** No element or attribute that could run or load anything (text that merely mentions them is fine). */
function expectNoActiveContent(body: string): void {
  expectFrame(body);
  const content = contentOf(body);
  expect(content).not.toMatch(/<(?:script|style|img|iframe|object|embed|form|link|base|meta)\b/i);
  expect(body).not.toMatch(/<[a-z][^>]*\son[a-z]+\s*=/i);
  expect(body).not.toMatch(/(?:href|src)\s*=\s*"?\s*javascript:/i);
}

describe("GET /reference/api", () => {
  it("lists every method of the registry, public, with strict headers and semantic HTML", async () => {
    const res = await get(t.app, "/reference/api");
    expect(res.statusCode, res.body).toBe(200);
    expectPageHeaders(res);
    expectNoActiveContent(res.body);
    expect(res.body).toContain("<h1>Native API reference</h1>");
    expect(res.body).toContain(`<code>${escapeHtml(SOAP_NAMESPACE)}</code>`);
    expect(NATIVE_METHODS.length).toBeGreaterThanOrEqual(4);
    expect(res.body.match(/<section /g)).toHaveLength(NATIVE_METHODS.length);
    for (const method of NATIVE_METHODS) {
      expect(res.body).toContain(
        `<a href="/reference/api/${encodeURIComponent(method.name)}"><code>${method.name}</code></a>`,
      );
      expect(withoutCode(res.body)).toContain(shown(method.summary));
      for (const parameter of method.parameters)
        expect(res.body).toContain(`<code>${escapeHtml(parameter.name)}</code>`);
    }
  });

  it("is public: no key needed, and a wrong one is not even looked at", async () => {
    const res = await get(t.app, "/reference/api?key=wrong-key", { "x-apikey": "wrong-key" });
    expect(res.statusCode).toBe(200);
  });

  it("answers HEAD with the GET's headers and no body", async () => {
    const full = await get(t.app, "/reference/api");
    const head = await t.app.inject({ method: "HEAD", url: "/reference/api" });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe("");
    expect(head.headers.etag).toBe(full.headers.etag);
    expectPageHeaders(head);
  });

  it("is cacheable by the reader alone: a stable ETag without a session, 304 on revalidation, also compressed", async () => {
    const first = await get(t.app, "/reference/api");
    const second = await get(t.app, "/reference/api");
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(second.headers.etag).toBe(etag);
    // The frame names the signed-in reader: no shared cache may keep a page.
    expect(first.headers["cache-control"]).toBe("private, no-cache");
    const revalidated = await get(t.app, "/reference/api", { "if-none-match": etag });
    expect(revalidated.statusCode).toBe(304);
    expect(revalidated.body).toBe("");

    const gzip = await get(t.app, "/reference/api", { "accept-encoding": "gzip" });
    expect(gzip.headers["content-encoding"]).toBe("gzip");
    expect(gzip.headers.etag).toBe(`W/${etag}`);
    const gzipRevalidated = await get(t.app, "/reference/api", {
      "accept-encoding": "gzip",
      "if-none-match": `W/${etag}`,
    });
    expect(gzipRevalidated.statusCode).toBe(304);
  });
});

describe("GET /reference/api/<method>", () => {
  it.each(NATIVE_METHODS.map((m) => [m.name, m] as const))(
    "%s: parameters, result fields, privilege and examples",
    async (name, method: NativeMethod) => {
      const res = await get(t.app, `/reference/api/${encodeURIComponent(name)}`);
      expect(res.statusCode, res.body).toBe(200);
      expectPageHeaders(res);
      expectNoActiveContent(res.body);
      expect(res.body).toContain(`<h1><code>${escapeHtml(name)}</code></h1>`);
      expect(withoutCode(res.body)).toContain(shown(method.summary));
      expect(res.body).toContain(`<code>${method.attribute}</code>`);
      expect(res.body).toContain("<code>native</code> scope");
      for (const parameter of method.parameters) {
        expect(withoutCode(res.body)).toContain(
          `<tr><th scope="row">${escapeHtml(parameter.name)}</th><td>${parameter.type}</td>` +
            `<td>${parameter.required ? "required" : "optional"}</td><td>${shown(parameter.description)}`,
        );
        expect(res.body).toContain(escapeHtml(`<${parameter.name}>`));
      }
      for (const field of propertyNames(method.result))
        expect(res.body).toMatch(new RegExp(`<code>[^<]*\\b${field}</code>`));
      if (method.result === undefined) expect(res.body).toContain("<p>None: the JSON call answers an empty 200");
      expect(res.body).toContain(`GET /api/json/${name}?key=YOUR_API_KEY`);
      expect(res.body).toContain(escapeHtml(`<${name} xmlns="${SOAP_NAMESPACE}">`));
      expect(res.body).toContain("&lt;API_Key&gt;YOUR_API_KEY&lt;/API_Key&gt;");
    },
  );

  it.each(NATIVE_METHODS.map((m) => [m.name] as const))(
    "%s: the JSON example reaches the method with its key where the page puts it",
    async (name) => {
      const page = await get(t.app, `/reference/api/${name}`);
      const line = /<pre><code>GET (\/api\/json\/[^<\s]+)<\/code><\/pre>/.exec(page.body)?.[1];
      expect(line).toBeDefined();
      const url = (line ?? "").replaceAll("&amp;", "&").replace("YOUR_API_KEY", t.adminKey);
      const res = await get(t.app, url);
      // Found, the key accepted: what the made-up values then give (a table, an empty table, a
      // 400 or a 404 for an unknown application) is the method's business.
      expect(res.body).not.toContain(`The native API method '${name}' does not exist.`);
      expect([401, 403]).not.toContain(res.statusCode);
      expectRequiredArgumentsGiven(method(name), res.body);
      expect(res.statusCode).toBeLessThan(500);
    },
  );

  it.each(NATIVE_METHODS.map((m) => [m.name] as const))(
    "%s: the SOAP example is an envelope /api/soap takes, with the headers the page shows",
    async (name) => {
      const page = await get(t.app, `/reference/api/${name}`);
      const example = /<pre><code>(POST \/api\/soap [\s\S]*?)<\/code><\/pre>/.exec(page.body)?.[1];
      expect(example).toBeDefined();
      const text = (example ?? "")
        .replaceAll("&lt;", "<")
        .replaceAll("&gt;", ">")
        .replaceAll("&quot;", '"')
        .replaceAll("&#39;", "'")
        .replaceAll("&amp;", "&");
      const [head = "", envelope = ""] = text.split("\n\n");
      const headers = Object.fromEntries(
        head
          .split("\n")
          .slice(1)
          .map((line) => line.split(": ", 2) as [string, string]),
      );
      const res = await t.app.inject({
        method: "POST",
        url: "/api/soap",
        headers,
        payload: envelope.replace("YOUR_API_KEY", t.adminKey),
      });
      // Method found, key accepted, the required arguments there: what the made-up values then give
      // (a table, or a fault for an unknown id, or a rule the registry cannot state, such as "Feed_Id or
      // Feed_Name") is the method's business.
      const refusal = String(res.headers["x-wharf-error"] ?? "");
      expect(refusal, res.body).not.toMatch(/^(?:UNKNOWN_NATIVE_METHOD|PERMISSION_DENIED|UNAUTHENTICATED|SOAP_.*)$/);
      expectRequiredArgumentsGiven(method(name), res.body);
      expect(res.statusCode === 200 || refusal !== "", res.body).toBe(true);
    },
  );

  it("finds methods in any letter case and shows the canonical name", async () => {
    const [method] = NATIVE_METHODS;
    const res = await get(t.app, `/reference/api/${method?.name.toLowerCase()}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(`<h1><code>${method?.name}</code></h1>`);
  });

  it("answers an unknown method with a 404 page (HEAD too)", async () => {
    const res = await get(t.app, "/reference/api/No_Such_Method");
    expect(res.statusCode).toBe(404);
    expectPageHeaders(res);
    expect(res.body).toContain("<h1>No such method</h1>");
    expect(res.body).toContain('<a href="/reference/api">');
    const head = await t.app.inject({ method: "HEAD", url: "/reference/api/No_Such_Method" });
    expect(head.statusCode).toBe(404);
    expect(head.body).toBe("");
  });
});

describe("escaping: a registry with hostile names and descriptions", () => {
  let app: FastifyInstance;
  const hostileName = `Evil_"<Method>'&`;
  const hostile = defineNativeMethod({
    name: "Evil_GetThings",
    summary: `<script>alert("summary")</script> & 'quoted'`,
    parameters: [
      {
        name: "Plain_Id",
        type: "integer",
        required: true,
        description: 'Id, `"><img src=x onerror=alert(1)>` as code',
      },
      {
        name: "Other_Text",
        type: "string",
        required: false,
        description: "e.g. </code><script>x</script>",
        aliases: ["<b>alias</b>"],
      },
    ],
    attribute: "Applications_View",
    result: z.object({
      Things: z
        .array(z.object({ Thing_Name: z.string().describe("</td><script>alert(2)</script>") }))
        .describe("<i>rows"),
    }),
    async run() {
      return { Things: [] };
    },
  });
  const named = defineNativeMethod({
    name: hostileName,
    summary: "A name no code should use, with `<b>code</b>` in backticks and an unpaired ` one",
    parameters: [],
    attribute: "Applications_View",
    result: undefined,
    async run() {},
  });

  beforeAll(async () => {
    // The web UI's security plugin and the reference routes alone, over the hostile registry.
    app = Fastify();
    await app.register(async (ui) => {
      await registerUiSecurity(ui);
      registerReferenceRoutes(ui, createNativeRegistry([hostile, named]));
    });
    await app.ready();
  });
  afterAll(async () => app.close());

  it("escapeHtml replaces the five characters that matter", () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe(
      "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;",
    );
  });

  it.each(["/reference/api", "/reference/api/evil_getthings"])("%s shows every hostile text as text", async (url) => {
    const res = await get(app, url);
    expect(res.statusCode, res.body).toBe(200);
    expectPageHeaders(res);
    expectNoActiveContent(res.body);
    expect(res.body).not.toContain("<b>");
    expect(res.body).not.toContain("<i>");
    expect(res.body).toContain("&lt;script&gt;alert(&quot;summary&quot;)&lt;/script&gt; &amp; &#39;quoted&#39;");
    if (url.endsWith("evil_getthings")) {
      expect(res.body).toContain("<td>Id, <code>&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</code> as code</td>");
      expect(res.body).toContain("&lt;b&gt;alias&lt;/b&gt;");
      expect(res.body).toContain("&lt;/td&gt;&lt;script&gt;alert(2)&lt;/script&gt;");
      expect(res.body).toContain("<code>Things[].Thing_Name</code>");
      // The SOAP example's XML is escaped once for XML, then once for HTML.
      expect(res.body).toContain(
        "&lt;!-- optional: &lt;Other_Text&gt;&amp;lt;/code&amp;gt;&amp;lt;script&amp;gt;x&amp;lt;/script&amp;gt;&lt;/Other_Text&gt; --&gt;",
      );
    }
  });

  it("links a method with a hostile name by its encoded name, and finds it again", async () => {
    const list = await get(app, "/reference/api");
    const href = `/reference/api/${encodeURIComponent(hostileName)}`;
    expect(list.body).toContain(`<a href="${escapeHtml(href)}"><code>${escapeHtml(hostileName)}</code></a>`);
    const res = await get(app, href);
    expect(res.statusCode).toBe(200);
    expectNoActiveContent(res.body);
    expect(res.body).toContain(`<h1><code>Evil_&quot;&lt;Method&gt;&#39;&amp;</code></h1>`);
    expect(res.body).toContain(
      "<p>A name no code should use, with `&lt;b&gt;code&lt;/b&gt;` in backticks and an unpaired ` one</p>",
    );
  });
});
