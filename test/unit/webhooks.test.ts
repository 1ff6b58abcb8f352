import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkHeaders } from "../../src/areas/webhooks/headers.js";
import { generateSecret, signatureOf } from "../../src/areas/webhooks/signature.js";
import { checkUrlTemplate, renderUrl } from "../../src/areas/webhooks/url-template.js";
import { retryDelayMs } from "../../src/areas/webhooks/worker.js";
import { verifySignature } from "../helpers/webhook-receiver.js";

const at = new Date("2030-01-02T03:04:05.678Z");

describe("webhook signatures", () => {
  it("signs <t>.<body> with HMAC-SHA-256, t in whole seconds", () => {
    const header = signatureOf("s3cret-s3cret-s3cret", '{"a":1}', at);
    const t = Math.floor(at.getTime() / 1000);
    const v1 = createHmac("sha256", "s3cret-s3cret-s3cret").update(`${t}.{"a":1}`).digest("hex");
    expect(header).toBe(`t=${t},v1=${v1}`);
  });

  it("verifies in the reference verifier; a changed body, secret, timestamp or an old one do not", () => {
    const body = '{"event":"package.added"}';
    const header = signatureOf("k".repeat(20), body, at);
    const now = at.getTime() / 1000;
    expect(verifySignature(header, body, "k".repeat(20), now)).toBe(true);
    expect(verifySignature(header, `${body} `, "k".repeat(20), now)).toBe(false);
    expect(verifySignature(header, body, "K".repeat(20), now)).toBe(false);
    expect(
      verifySignature(
        header.replace(/t=\d+/, (m) => `t=${Number(m.slice(2)) + 1}`),
        body,
        "k".repeat(20),
        now,
      ),
    ).toBe(false);
    expect(verifySignature(header, body, "k".repeat(20), now + 600)).toBe(false);
    expect(verifySignature(undefined, body, "k".repeat(20), now)).toBe(false);
  });

  it("generates distinct secrets of 32 random bytes", () => {
    const a = generateSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(generateSecret()).not.toBe(a);
  });
});

describe("webhook URL templates", () => {
  const values = { feed: "main feed", group: "a/b", name: "..", version: "1.0.0+build", event: "package.added" };
  it("URL-encodes each value; '.' and '..' only in the query, never as a path segment", () => {
    expect(renderUrl("https://h.example/x/{feed}/{group}?n={name}&v={version}&e={event}", values)).toBe(
      "https://h.example/x/main%20feed/a%2Fb?n=..&v=1.0.0%2Bbuild&e=package.added",
    );
    expect(() => renderUrl("https://h.example/x/{name}/y", values)).toThrow("cannot be placed in the URL's path");
    expect(() => renderUrl("https://h.example/x/{name}/y", { ...values, name: "." })).toThrow("cannot be placed");
    expect(renderUrl("https://h.example/x/{name}/y", { ...values, name: "..." })).toBe("https://h.example/x/.../y");
  });
  it.each([
    ["", "1 to 4096"],
    ["h.example/x", "http:// or https://"],
    ["https://{feed}.example/", "not in its host"],
    ["https://h.example:{version}/", "not in its host"],
    ["https://h.example/{other}", "unknown placeholder {other}"],
    ["https://h.example/{feed", "unmatched"],
    ["https://h.example/feed}", "unmatched"],
    ["https://[::1/", "not a valid absolute URL"],
  ])("refuses %j", (template, message) => {
    expect(() => checkUrlTemplate(template)).toThrow(message);
  });
  it("accepts templates with placeholders in the path and query", () => {
    expect(() => checkUrlTemplate("https://h.example:8443/{feed}?e={event}#{name}")).not.toThrow();
  });
});

describe("webhook headers", () => {
  it("keeps valid ones (values trimmed) and refuses hop-by-hop, framing and Wharf's own", () => {
    expect(checkHeaders({ Authorization: " Bearer x ", "X-Routing": "a" })).toEqual({
      Authorization: "Bearer x",
      "X-Routing": "a",
    });
    for (const name of [
      "Host",
      "content-length",
      "Transfer-Encoding",
      "Connection",
      "TE",
      "Upgrade",
      "Content-Type",
      "X-Wharf-Event",
      "x-wharf-anything",
    ]) {
      expect(() => checkHeaders({ [name]: "v" }), name).toThrow("set by Wharf");
    }
    expect(() => checkHeaders({ "X-A": "1", "x-a": "2" })).toThrow("twice");
    expect(() => checkHeaders({ "X-A": "a\nb" })).toThrow("one line");
    expect(() => checkHeaders({ "X:A": "a" })).toThrow("not a valid header name");
    expect(() => checkHeaders(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-${i}`, "v"])))).toThrow(
      "at most 20",
    );
  });
});

describe("retry backoff", () => {
  it("waits the first delay, then twice as long each time, capped", () => {
    const settings = { retryFirstMs: 30_000, retryMaxMs: 3_600_000 };
    expect([1, 2, 3, 4, 7, 8, 50].map((n) => retryDelayMs(n, settings))).toEqual([
      30_000, 60_000, 120_000, 240_000, 1_920_000, 3_600_000, 3_600_000,
    ]);
  });
});
