import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { hashApiKey } from "../../src/areas/security/api-key-hash.js";
import { createAuthenticator } from "../../src/areas/security/authenticator.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { createAuthRepositoryOf } from "../../src/areas/security/repository.js";
import { createSecurityServices, type SecurityServices } from "../../src/areas/security/service.js";
import { systemClock } from "../../src/domain/clock.js";
import type { Authenticator } from "../../src/http/auth.js";
import { dataPaths } from "../../src/storage/data-paths.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { domainErrorOf } from "../helpers/responses.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * The security area wired on PostgreSQL (cluster mode), as app.ts and main.ts build it: the admin
 * key's bootstrap, the security services (users, groups, permissions, API keys), and the
 * authenticator on the auth repository picked for the database, following another node's changes
 * through the change feed.
 */

const noFeeds = { findScope: async () => undefined };

describe.skipIf(!postgresInstalled())("security on PostgreSQL", () => {
  let dir: string;
  let node: NodeDatabase;
  let other: NodeDatabase;
  let services: SecurityServices;
  let otherServices: SecurityServices;
  let authenticator: Authenticator;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-security-pg-"));
    const url = await testPostgres().createDatabase();
    node = await openNodeDatabase({ url, nodeId: "test", migrate: true });
    other = await openNodeDatabase({ url, nodeId: "other" });
    services = createSecurityServices({ db: node.db, clock: systemClock, feeds: noFeeds });
    otherServices = createSecurityServices({ db: other.db, clock: systemClock, feeds: noFeeds });
    authenticator = createAuthenticator({
      repository: createAuthRepositoryOf(node.db),
      clock: systemClock,
      resolveFeed: async () => undefined,
    });
  });
  afterAll(async () => {
    await other?.close();
    await node?.close();
    if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true });
  });

  it("bootstraps the admin key once, then ensures the operator's", async () => {
    const generated = await bootstrapAdminKey(node.db, dir, undefined, systemClock);
    expect(generated).toEqual(expect.any(String));
    expect((await fs.readFile(dataPaths(dir).adminApiKey, "utf8")).trim()).toBe(generated);
    // Another node starting later finds the key and generates none.
    expect(await bootstrapAdminKey(other.db, dir, undefined, systemClock)).toBeUndefined();
    const principal = await authenticator.authenticate({ kind: "api-key", key: generated as string });
    expect(principal).toMatchObject({ type: "system-key", apis: ["full-control"] });

    const operator = "operator-admin-key-0123456789";
    expect(await bootstrapAdminKey(node.db, dir, operator, systemClock)).toBeUndefined();
    expect(await bootstrapAdminKey(other.db, dir, operator, systemClock)).toBeUndefined();
    const keys = await services.apiKeys.list();
    expect(keys.filter((key) => key.type === "System")).toHaveLength(2);
    const record = await createAuthRepositoryOf(node.db).findKeyByHash(hashApiKey(operator));
    expect(record?.systemApis).toEqual(["full-control"]);
  });

  it("manages users, groups and memberships through the service, with SQLite's conflicts", async () => {
    await services.users.saveGroup({ name: "Developers" });
    const dave = await services.users.addUser({
      name: "dave",
      displayName: "Dave",
      password: "dave-password-1",
      groups: ["Developers"],
    });
    expect(dave).toMatchObject({ name: "dave", displayName: "Dave", groups: ["Developers"] });
    expect((await domainErrorOf(services.users.addUser({ name: "Dave", password: "dave-password-2" }))).code).toBe(
      "USER_EXISTS",
    );
    await services.users.addUser({ name: "erin", password: "erin-password-1" });
    const group = await otherServices.users.setMembership("Developers", "erin", true);
    expect(group.users).toEqual(["dave", "erin"]);
    expect((await services.users.listUsers("er")).map((user) => user.name)).toEqual(["erin"]);
    expect(await services.users.deleteUser("erin")).toBe(true);
    expect((await services.users.listGroups()).find((g) => g.name === "Developers")?.users).toEqual(["dave"]);
  });

  it("grants through permissions, and the authenticator follows another node's change", async () => {
    const dave = { kind: "password", user: "dave", password: "dave-password-1" } as const;
    const principal = await authenticator.authenticate(dave);
    expect(principal).toMatchObject({ type: "user", userName: "dave" });
    const need = { attribute: "Admin_ManageFeed" } as const;
    expect(await authenticator.allows(principal, need)).toBe(false);

    const permission = await otherServices.permissions.addPermission({ group: "Developers", task: "Administer" });
    await vi.waitFor(async () => expect(await authenticator.allows(principal, need)).toBe(true), {
      timeout: 5_000,
      interval: 20,
    });
    expect(
      (await domainErrorOf(services.permissions.addPermission({ group: "Developers", task: "Administer" }))).code,
    ).toBe("PERMISSION_EXISTS");
    await otherServices.permissions.removePermission(permission.id);
    await vi.waitFor(async () => expect(await authenticator.allows(principal, need)).toBe(false), {
      timeout: 5_000,
      interval: 20,
    });

    await services.permissions.addTask({ name: "Readers", attributes: ["feeds_viewfeed"] });
    expect((await services.permissions.listTasks()).find((task) => task.name === "Readers")?.attributes).toEqual([
      "Feeds_ViewFeed",
    ]);
    await services.permissions.deleteTask("Readers");
  });

  it("creates, lists and deletes API keys; a key deleted on another node is refused", async () => {
    const created = await services.apiKeys.create({ type: "Personal", user: "dave", displayName: "laptop" });
    expect(created).toMatchObject({ type: "Personal", user: "dave", displayName: "laptop" });
    const key = { kind: "api-key", key: created.key } as const;
    expect(await authenticator.authenticate(key)).toMatchObject({ type: "user", userName: "dave" });
    expect((await services.apiKeys.list()).map((listed) => listed.id)).toContain(created.id);

    await otherServices.apiKeys.delete(created.id);
    await vi.waitFor(
      async () => {
        await expect(authenticator.authenticate(key)).rejects.toMatchObject({ kind: "forbidden" });
      },
      { timeout: 5_000, interval: 20 },
    );
    expect((await domainErrorOf(services.apiKeys.delete(created.id))).kind).toBe("not_found");
  });
});
