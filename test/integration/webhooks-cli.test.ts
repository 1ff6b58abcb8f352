import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhooksCommand } from "../../src/cli/webhooks.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";
import { type Receiver, startReceiver, verifySignature } from "../helpers/webhook-receiver.js";

/** `wharf webhooks list|create|delete|test|deliveries`, against a running server over HTTP. */

let t: TestApp;
let receiver: Receiver;
let server: string;
let lines: string[];
let errors: string[];

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_FETCH_ALLOW_PRIVATE: "true", WHARF_WEBHOOK_POLL_SECONDS: "0.05" } });
  await createUpackFixtures(t).createFeed("main");
  receiver = await startReceiver();
  server = await t.app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

async function wharf(...args: string[]): Promise<number> {
  lines = [];
  errors = [];
  return webhooksCommand([...args, "--server", server, "--api-key", t.adminKey], {
    config: t.config,
    out: (line) => lines.push(line),
    err: (line) => errors.push(line),
    readSecret: async () => "secret-from-standard-input-0123\n",
  });
}

describe("wharf webhooks", () => {
  it("creates (printing the secret once), lists, tests, shows deliveries and deletes", async () => {
    expect(await wharf("list")).toBe(0);
    expect(lines).toEqual(["No webhooks."]);

    const url = `${receiver.base}/hooks/{feed}?e={event}`;
    expect(
      await wharf(
        "create",
        "ci",
        "--url",
        url,
        "--feed",
        "main",
        "--events",
        "package.added, package.deleted",
        "--headers",
        '{"X-Token":"t"}',
      ),
    ).toBe(0);
    expect(lines[0]).toMatch(/^Created webhook (\d+) 'ci'\.$/);
    const id = /webhook (\d+)/.exec(lines[0] ?? "")?.[1] ?? "";
    const secret = /: (whsec_\S+)$/.exec(lines[1] ?? "")?.[1] ?? "";
    expect(secret).toMatch(/^whsec_/);

    expect(await wharf("list")).toBe(0);
    expect(lines[0]).toMatch(/^ID\s+NAME\s+FEED\s+ACTIVE\s+METHOD\s+URL\s+EVENTS$/);
    expect(lines[1]).toContain(`${id}   ci    main  true    POST    ${url}  package.added,package.deleted`);
    expect(lines.join("\n")).not.toContain(secret);

    expect(await wharf("test", id)).toBe(0);
    expect(lines).toEqual([expect.stringMatching(/^succeeded: HTTP 200 in \d+ ms$/)]);
    const ping = receiver.received.at(-1);
    expect(ping?.url).toBe("/hooks/main?e=ping");
    expect(ping?.headers["x-token"]).toBe("t");
    expect(
      verifySignature(ping?.headers["x-wharf-signature"] as string, ping?.body ?? "", secret, Date.now() / 1000),
    ).toBe(true);

    receiver.answer = (_request, response) => response.writeHead(500).end();
    expect(await wharf("test", id)).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^failed: HTTP 500 \(The receiver answered 500\.\) in \d+ ms$/)]);

    expect(await wharf("deliveries", id, "--limit", "5")).toBe(0);
    expect(lines[0]).toMatch(/^ID\s+CREATED\s+EVENT\s+STATE\s+ATTEMPTS\s+LAST ANSWER\s+NEXT ATTEMPT$/);
    expect(lines[1]).toMatch(/ping\s+failed\s+1\s+HTTP 500/);
    expect(lines[2]).toMatch(/ping\s+succeeded\s+1\s+HTTP 200/);

    expect(await wharf("delete", id)).toBe(0);
    expect(lines).toEqual([`Deleted webhook ${id}.`]);
    expect(await wharf("delete", id)).toBe(1);
    expect(errors.join("\n")).toContain("answered 404");
  });

  it("reads the secret from standard input with --secret -", async () => {
    expect(await wharf("create", "stdin", "--url", `${receiver.base}/x`, "--secret", "-")).toBe(0);
    expect(lines[1]).toContain("secret-from-standard-input-0123");
    const id = /webhook (\d+)/.exec(lines[0] ?? "")?.[1] ?? "";
    receiver.answer = (_request, response) => response.writeHead(200).end();
    expect(await wharf("test", id)).toBe(0);
    const ping = receiver.received.at(-1);
    expect(
      verifySignature(
        ping?.headers["x-wharf-signature"] as string,
        ping?.body ?? "",
        "secret-from-standard-input-0123",
        Date.now() / 1000,
      ),
    ).toBe(true);
    await wharf("delete", id);
  });

  it("says what the server refused, and refuses bad arguments with the usage", async () => {
    expect(await wharf("create", "bad", "--url", "http://169.254.169.254/")).toBe(1);
    expect(errors.join("\n")).toMatch(/answered 400: .*cloud metadata address, which is never allowed/);
    expect(await wharf("create", "x")).toBe(2);
    expect(errors.join("\n")).toContain("needs --url");
    expect(await wharf("create", "x", "--url", "http://a/", "--headers", "[1]")).toBe(2);
    expect(await wharf("test", "abc")).toBe(2);
    expect(await wharf("delete", "1", "--url", "http://a/")).toBe(2);
    expect(await wharf("frobnicate")).toBe(2);
    expect(errors.join("\n")).toContain("Usage:");
    lines = [];
    errors = [];
    const noKey = await webhooksCommand(["list", "--server", server], {
      config: t.config,
      out: (l) => lines.push(l),
      err: (l) => errors.push(l),
    });
    if (process.env.WHARF_API_KEY === undefined) {
      expect(noKey).toBe(2);
      expect(errors.join("\n")).toContain("WHARF_API_KEY");
    }
    const wrong = await webhooksCommand(["list", "--server", server, "--api-key", "wrong-key-0123456789"], {
      config: t.config,
      out: (l) => lines.push(l),
      err: (l) => errors.push(l),
    });
    expect(wrong).toBe(1);
    expect(errors.join("\n")).toContain("answered 403");
  });
});
