import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runWharf, startServer } from "./process.js";

/** `wharf applications|environments|pipelines` as an operator runs them: child processes, exit codes, streams. */

let dataDir: string;
beforeEach(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-cli-delivery-e2e-"));
});
afterEach(async () => {
  await fs.rm(dataDir, { recursive: true, force: true });
});

const wharf = (...args: string[]) => runWharf(args, { WHARF_DATA_DIR: dataDir });

describe("wharf delivery commands (command line)", () => {
  it("are listed by --help, and their own help needs no database", async () => {
    const help = await wharf("--help");
    expect(help.code).toBe(0);
    for (const command of ["applications", "environments", "pipelines"]) {
      expect(help.stdout).toMatch(new RegExp(`^\\s+${command} <subcommand>`, "m"));
      const own = await wharf(command, "--help");
      expect(own).toMatchObject({ code: 0, stderr: "" });
      expect(own.stdout).toContain(`wharf ${command} list`);
    }
    expect(await fs.readdir(dataDir)).toEqual([]);
  });

  // Seven `wharf` processes one after another: 14 s on a quiet CI machine, over 30 s on a loaded one.
  it(
    "set up a pipeline on the data directory of a running server, which then takes a release",
    { timeout: 90_000 },
    async () => {
      const key = `cli-admin-${randomBytes(16).toString("hex")}`;
      const server = await startServer({ WHARF_DATA_DIR: dataDir, WHARF_ADMIN_API_KEY: key });
      try {
        expect((await wharf("environments", "create", "Integration")).code).toBe(0);
        const app = await wharf("applications", "create", "Web", "--release-usage", "optional");
        expect(app).toMatchObject({ code: 0, stderr: "" });
        expect(JSON.parse(app.stdout)).toMatchObject({ name: "Web", releaseUsage: "Optional" });
        const file = path.join(dataDir, "pipeline.json");
        await fs.writeFile(
          file,
          JSON.stringify({ name: "Web", stages: [{ name: "Integration", environmentName: "Integration" }] }),
        );
        expect((await wharf("pipelines", "create", "--file", file)).code).toBe(0);
        const listed = await wharf("pipelines", "list");
        expect(listed.stdout).toMatch(/^\d+\s+Web\s+true\s+Integration$/m);

        const res = await fetch(`${server.url}/api/releases/create`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-ApiKey": key },
          body: JSON.stringify({ applicationName: "Web", releaseNumber: "1.0", pipelineName: "Web" }),
        });
        expect(res.status).toBe(200);

        const inUse = await wharf("pipelines", "delete", "Web");
        expect(inUse).toMatchObject({ code: 1, stdout: "" });
        expect(inUse.stderr).toMatch(/^error: /m);
        expect(inUse.stderr).not.toMatch(/at .*\.[jt]s:\d+/);
      } finally {
        expect(await server.stop()).toEqual({ code: 0, signal: null });
      }
    },
  );
});
