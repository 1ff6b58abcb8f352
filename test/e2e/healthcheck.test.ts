import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { healthTarget, healthUrl } from "../../src/cli/healthcheck.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { runWharf } from "./process.js";

/**
 * `wharf healthcheck`, the Docker image's HEALTHCHECK, asks the server where WHARF_HOST and
 * WHARF_PORT say it listens: a real Wharf listening on loopback, the command as a real process.
 */

describe("healthUrl", () => {
  it("asks the loopback of the family an unspecified address listens on, a given address itself", () => {
    expect(healthUrl("0.0.0.0", 8624)).toBe("http://127.0.0.1:8624/health");
    expect(healthUrl("::", 8624)).toBe("http://[::1]:8624/health");
    expect(healthTarget("0:0:0:0:0:0:0:0")).toBe("::1");
    expect(healthUrl("10.1.2.3", 80)).toBe("http://10.1.2.3:80/health");
    expect(healthUrl("fd00::5", 9000)).toBe("http://[fd00::5]:9000/health");
    expect(healthUrl("fe80::1%eth0", 9000)).toBe("http://[fe80::1%25eth0]:9000/health");
    expect(healthUrl("wharf.internal", 8624)).toBe("http://wharf.internal:8624/health");
  });
});

let wharf: TestApp;
let port: number;

beforeAll(async () => {
  wharf = await buildTestApp();
  await wharf.app.listen({ host: "127.0.0.1", port: 0 });
  port = (wharf.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await wharf.close();
});

function healthcheck(host: string, checkPort: number, args: string[] = []) {
  return runWharf(["healthcheck", ...args], { WHARF_HOST: host, WHARF_PORT: String(checkPort) });
}

describe("wharf healthcheck (real processes)", () => {
  it("exits 0 for a healthy server on the address WHARF_HOST names, 0.0.0.0 asked on 127.0.0.1", async () => {
    for (const host of ["0.0.0.0", "127.0.0.1"]) {
      const result = await healthcheck(host, port);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(`healthy: http://127.0.0.1:${port}/health answered 200\n`);
    }
  });

  it("asks :: on ::1, so that a server listening on IPv4 alone is not taken for it", async () => {
    const ipv6 = await buildTestApp();
    try {
      await ipv6.app.listen({ host: "::1", port: 0 });
      const ipv6Port = (ipv6.app.server.address() as AddressInfo).port;
      for (const host of ["::", "::1"]) {
        const result = await healthcheck(host, ipv6Port);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toBe(`healthy: http://[::1]:${ipv6Port}/health answered 200\n`);
      }
    } finally {
      await ipv6.close();
    }
    const result = await healthcheck("::", port);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`unhealthy: http://[::1]:${port}/health could not be reached`);
  });

  it("exits 1 naming the status when the server answers anything but 200, and when nothing listens", async () => {
    const failing = http.createServer((_request, response) => response.writeHead(503).end());
    await new Promise<void>((resolve) => failing.listen(0, "127.0.0.1", resolve));
    const failingPort = (failing.address() as AddressInfo).port;
    try {
      const answered = await healthcheck("127.0.0.1", failingPort);
      expect(answered.code).toBe(1);
      expect(answered.stderr).toBe(`unhealthy: http://127.0.0.1:${failingPort}/health answered 503\n`);
    } finally {
      await new Promise((resolve) => failing.close(resolve));
    }
    const nobody = await healthcheck("127.0.0.1", failingPort);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/could not be reached \(connect ECONNREFUSED/);
  });

  it("refuses a port chosen at start-up, and arguments, with exit 2", async () => {
    const random = await healthcheck("127.0.0.1", 0);
    expect(random.code).toBe(2);
    expect(random.stderr).toContain("WHARF_PORT is 0");
    const extra = await healthcheck("127.0.0.1", port, ["http://elsewhere/"]);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain("Usage: wharf healthcheck");
  });
});
