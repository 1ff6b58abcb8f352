import type { TestDatabase } from "./both-databases.js";

/**
 * Parent rows the repository contract tests need (a feed for its packages, a user for its keys, an
 * application for its releases...), written straight with SQL through a TestDatabase's `exec`, so
 * the same on SQLite and PostgreSQL (both-databases.ts), with no repository of another area. Each
 * function gives the new row's id; a name's key is the name in lower case, as the areas store it.
 */
type Exec = TestDatabase["exec"];

const insertedId = async (exec: Exec, sql: string, params: readonly unknown[]): Promise<number> =>
  Number((await exec(`${sql} RETURNING id`, params))[0]?.id);

/** A feed with default settings (storage key `key-<name>`): for the rows a feed holds. */
export function insertFeed(exec: Exec, name: string, at: string, feedType: "universal" | "asset" = "universal") {
  return insertedId(
    exec,
    "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES (?, ?, ?, '{}', ?, ?)",
    [name, feedType, `key-${name}`, at, at],
  );
}

/** A user, without a password unless given its hash: for keys, grants and memberships. */
export function insertUser(exec: Exec, name: string, at: string, passwordHash?: string) {
  return insertedId(exec, "INSERT INTO users (name, name_key, password_hash, created_at) VALUES (?, ?, ?, ?)", [
    name,
    name.toLowerCase(),
    passwordHash ?? null,
    at,
  ]);
}

/** A group with no members: for grants and memberships. */
export function insertGroup(exec: Exec, name: string) {
  return insertedId(exec, "INSERT INTO groups (name, name_key) VALUES (?, ?)", [name, name.toLowerCase()]);
}

/** A server rooted at /srv, local or over SSH (to host `h`, port 22) with a credential: for what uses servers. */
export function insertServer(
  exec: Exec,
  name: string,
  at: string,
  connection: { readonly type: "local" } | { readonly type: "ssh"; readonly credentialsId: number },
) {
  const ssh = connection.type === "ssh" ? connection : undefined;
  return insertedId(
    exec,
    `INSERT INTO servers (name, name_key, server_type, host_name, port, credentials_id, root_path, created_at, modified_at)
     VALUES (?, ?, ?, ?, ?, ?, '/srv', ?, ?)`,
    [name, name.toLowerCase(), connection.type, ssh ? "h" : null, ssh ? 22 : null, ssh?.credentialsId ?? null, at, at],
  );
}

/** An active agent server (its key's hash `hash-<name>`): for agents' polls and work. */
export function insertAgentServer(exec: Exec, name: string, at: string) {
  return insertedId(
    exec,
    `INSERT INTO servers (name, name_key, server_type, active, agent_key_hash, created_at, modified_at)
     VALUES (?, ?, 'agent', 1, ?, ?, ?)`,
    [name, name.toLowerCase(), `hash-${name}`, at, at],
  );
}

/** An application (releases optional, sequential build numbers): for releases and what they hold. */
export function insertApplication(exec: Exec, name: string, at: string) {
  return insertedId(
    exec,
    `INSERT INTO applications (name, name_key, release_usage, build_number_scheme, created_at)
     VALUES (?, ?, 'optional', 'sequential', ?)`,
    [name, name.toLowerCase(), at],
  );
}

/** An active release of an application: for what belongs to a release. */
export function insertRelease(
  exec: Exec,
  release: {
    readonly applicationId: number;
    readonly number: string;
    readonly sequence: number;
    readonly createdBy: string;
    readonly createdOn: string;
    /** The number when not given. */
    readonly name?: string;
    readonly pipelineId?: number;
  },
) {
  return insertedId(
    exec,
    `INSERT INTO releases (application_id, number, number_key, name, sequence, pipeline_id, status, created_by, created_on)
     VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)`,
    [
      release.applicationId,
      release.number,
      release.number.toLowerCase(),
      release.name ?? release.number,
      release.sequence,
      release.pipelineId ?? null,
      release.createdBy,
      release.createdOn,
    ],
  );
}
