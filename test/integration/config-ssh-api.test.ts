import { chmod, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checked,
  type ConfigurationWorld,
  configurationWorld,
  jobEnded,
  jobLog,
  role,
} from "../helpers/configuration.js";
import { skipSshTests, startSshd, type SshServer } from "../helpers/sshd.js";
import { execute } from "../helpers/fixtures.js";

/**
 * An `ssh` server end to end through the APIs (issue 13 sections 3 to 5): a stored credential, a
 * server whose host key is pinned on creation, the seed's check and remediate over SFTP against a
 * real OpenSSH server, drift made on the target from outside, and a changed host key turning the
 * server to `error` with a text that says so (and never a secret).
 */
describe.skipIf(skipSshTests)("ssh servers through the configuration API", () => {
  let w: ConfigurationWorld;
  let sshd: SshServer;
  const onTarget = (itemPath: string) => path.join(sshd.root, "web", itemPath);

  beforeAll(async () => {
    sshd = await startSshd();
    w = await configurationWorld();
    const credential = await w.admin("/api/infrastructure/credentials/create/deploy", {
      userName: sshd.userName,
      privateKey: sshd.privateKey,
    });
    expect(credential.statusCode, credential.body).toBe(201);
    await role(w, "site", {
      items: [
        { type: "directory", path: "/srv/site", mode: "0755" },
        { type: "file", path: "/srv/site/index.html", template: "<h1>$Greeting</h1>\n", mode: "0644" },
        { type: "file", path: "/srv/site/token", content: "s3cr3t-token", sensitive: true, mode: "0600" },
      ],
      variables: { Greeting: "hello over ssh" },
    });
    const server = await w.admin("/api/infrastructure/servers/create/web", {
      serverType: "ssh",
      hostName: sshd.host,
      port: sshd.port,
      credentialsName: "deploy",
      rootPath: path.join(sshd.root, "web"),
      roles: ["site"],
      drift: "reportOnly",
    });
    expect(server.statusCode, server.body).toBe(201);
  });
  afterAll(async () => {
    await w?.close();
    await sshd?.stop();
  });

  it("checks, remediates and finds drift made on the target", async () => {
    expect((await checked(w, "web")).status).toBe("drifted");
    const remediation = await w.inedo("/api/configuration/remediate/server/web");
    expect(remediation.statusCode, remediation.body).toBe(200);
    const word = await jobEnded(w, remediation.body);
    expect(word, (await jobLog(w, Number(remediation.body))).join("\n")).toBe("completed");
    expect((await w.settled("web")).status).toBe("current");
    expect(await readFile(onTarget("/srv/site/index.html"), "utf8")).toBe("<h1>hello over ssh</h1>\n");
    expect(await readFile(onTarget("/srv/site/token"), "utf8")).toBe("s3cr3t-token");
    expect((await stat(onTarget("/srv/site/token"))).mode & 0o777).toBe(0o600);
    expect((await stat(onTarget("/srv/site/token"))).uid).toBe(sshd.uid);

    await writeFile(onTarget("/srv/site/index.html"), "defaced\n");
    await chmod(onTarget("/srv/site/token"), 0o644);
    expect((await checked(w, "web")).status).toBe("drifted");
    const items = (await w.inedo("/api/configuration/server/web")).json() as Record<string, unknown>[];
    expect(items.filter((item) => item.status === "drifted").map((item) => item.key)).toEqual([
      "/srv/site/index.html",
      "/srv/site/token",
    ]);
    expect(JSON.stringify(items)).not.toContain("s3cr3t-token");
  });

  it("turns the server to error, saying the host key changed, when the pin no longer matches", async () => {
    await execute(w.t.database, "UPDATE servers SET host_key_sha256 = ? WHERE name_key = 'web'", [
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ]);
    const status = await checked(w, "web");
    expect(status.status).toBe("error");
    expect(String(status.errorText)).toMatch(/host key of 127\.0\.0\.1:\d+ changed/);
    expect(String(status.errorText)).not.toContain("PRIVATE KEY");
  });
});
