import { conflict, DomainError, notFound } from "../../domain/errors.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../storage/sqlite-errors.js";
import { type SecretBox, SecretUnreadableError } from "../../storage/secrets.js";

/**
 * SQL for `credentials` (migration 0011): what ssh servers log in with. The secret (a private key
 * or a password) is stored sealed (storage/secrets.ts) and leaves this file only through
 * CredentialsStore.open(), for the SSH executor: a Credential, which every API answer and log line
 * is made from, has no secret at all.
 */

export const CREDENTIAL_KINDS = ["ssh-key", "ssh-password"] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

export interface Credential {
  readonly id: number;
  readonly name: string;
  readonly kind: CredentialKind;
  readonly userName: string;
  readonly createdAt: string;
  readonly modifiedAt: string;
}

export interface CredentialWrite {
  readonly name: string;
  readonly kind: CredentialKind;
  readonly userName: string;
  /** Sealed with SEALED_PURPOSE; never plaintext. */
  readonly sealedSecret: string;
}

/** The SecretBox purpose of a credential's secret: it opens as nothing else. */
export const SEALED_PURPOSE = "credentials";

export interface CredentialsRepository {
  /** Ordered by name, case-insensitively. */
  list(): Promise<Credential[]>;
  /** By name, case-insensitively. */
  findByName(name: string): Promise<Credential | undefined>;
  /** Throws conflict CREDENTIAL_NAME_TAKEN. */
  insert(write: CredentialWrite, now: string): Promise<Credential>;
  /**
   * Reads the credential, applies `change` (which may throw to abort) and writes the result, in one
   * transaction; not_found, conflict CREDENTIAL_NAME_TAKEN.
   */
  update(name: string, change: (current: Credential) => Partial<CredentialWrite>, now: string): Promise<Credential>;
  /** not_found; conflict CREDENTIAL_IN_USE naming the servers that use it. */
  delete(name: string): Promise<void>;
  /** kind, user name and the sealed secret of one credential. */
  sealed(id: number): Promise<{ name: string; kind: CredentialKind; userName: string; secret: string } | undefined>;
  /** Replaces every secret for which `reseal` returns a new text; how many were replaced. */
  resealSecrets(reseal: (credential: string, stored: string) => string | undefined): Promise<number>;
}

export interface CredentialRow {
  id: number;
  name: string;
  kind: CredentialKind;
  user_name: string;
  created_at: string;
  modified_at: string;
}

export const CREDENTIAL_COLUMNS = "id, name, kind, user_name, created_at, modified_at";

/** conflict CREDENTIAL_NAME_TAKEN (both databases). */
export const credentialNameTaken = (name: string) =>
  conflict("CREDENTIAL_NAME_TAKEN", `A credential named '${name}' already exists.`);

/** not_found CREDENTIAL_NOT_FOUND (both databases). */
export const credentialNotFound = (name: string) =>
  notFound("CREDENTIAL_NOT_FOUND", `The credential '${name}' was not found.`);

/** Why an insert or update of the credential `name` failed, as the API says it (both databases). */
export function credentialWriteFailure(name: string, error: unknown): unknown {
  return isUniqueViolation(error) ? credentialNameTaken(name) : error;
}

export function createCredentialsRepository(db: Db): CredentialsRepository {
  const q = {
    all: db.prepare<[], CredentialRow>(
      `SELECT ${CREDENTIAL_COLUMNS} FROM credentials ORDER BY name COLLATE NOCASE, id`,
    ),
    byName: db.prepare<[string], CredentialRow>(`SELECT ${CREDENTIAL_COLUMNS} FROM credentials WHERE name_key = ?`),
    byId: db.prepare<[number], CredentialRow>(`SELECT ${CREDENTIAL_COLUMNS} FROM credentials WHERE id = ?`),
    sealed: db.prepare<[number], { name: string; kind: CredentialKind; user_name: string; secret: string }>(
      "SELECT name, kind, user_name, secret FROM credentials WHERE id = ?",
    ),
    secrets: db.prepare<[], { id: number; name: string; secret: string }>("SELECT id, name, secret FROM credentials"),
    setSecret: db.prepare<[string, number]>("UPDATE credentials SET secret = ? WHERE id = ?"),
    insert: db.prepare<[string, string, string, string, string, string, string], { id: number }>(
      `INSERT INTO credentials (name, name_key, kind, user_name, secret, created_at, modified_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ),
    update: db.prepare<[string, string, string, string, string | null, string, number]>(
      `UPDATE credentials SET name = ?, name_key = ?, kind = ?, user_name = ?, secret = coalesce(?, secret),
       modified_at = ? WHERE id = ?`,
    ),
    users: db.prepare<[number], { name: string }>(
      "SELECT name FROM servers WHERE credentials_id = ? ORDER BY name COLLATE NOCASE LIMIT 11",
    ),
    delete: db.prepare<[number]>("DELETE FROM credentials WHERE id = ?"),
  };

  function claimName(id: number | undefined, name: string): void {
    const owner = q.byName.get(name.toLowerCase());
    if (owner && owner.id !== id) throw credentialNameTaken(owner.name);
  }

  const insertTx = db.transaction((write: CredentialWrite, now: string): Credential => {
    claimName(undefined, write.name);
    const { id } = q.insert.get(
      write.name,
      write.name.toLowerCase(),
      write.kind,
      write.userName,
      write.sealedSecret,
      now,
      now,
    ) as { id: number };
    return toCredential(q.byId.get(id) as CredentialRow);
  });

  const updateTx = db.transaction(
    (name: string, change: (current: Credential) => Partial<CredentialWrite>, now: string): Credential => {
      const row = q.byName.get(name.toLowerCase());
      if (!row) throw credentialNotFound(name);
      const current = toCredential(row);
      const next = change(current);
      const newName = next.name ?? current.name;
      claimName(current.id, newName);
      q.update.run(
        newName,
        newName.toLowerCase(),
        next.kind ?? current.kind,
        next.userName ?? current.userName,
        next.sealedSecret ?? null,
        now,
        current.id,
      );
      return toCredential(q.byId.get(current.id) as CredentialRow);
    },
  );

  const deleteTx = db.transaction((name: string): void => {
    const row = q.byName.get(name.toLowerCase());
    if (!row) throw credentialNotFound(name);
    const users = q.users.all(row.id).map((server) => server.name);
    if (users.length > 0) throw credentialInUse(row.name, users);
    q.delete.run(row.id);
  });

  const resealTx = db.transaction((reseal: (credential: string, stored: string) => string | undefined): number => {
    let count = 0;
    for (const row of q.secrets.all()) {
      const sealed = reseal(row.name, row.secret);
      if (sealed !== undefined && sealed !== row.secret) count += q.setSecret.run(sealed, row.id).changes;
    }
    return count;
  });

  return withBusyRetries(db, {
    async list() {
      return q.all.all().map(toCredential);
    },
    async findByName(name) {
      const row = q.byName.get(name.toLowerCase());
      return row && toCredential(row);
    },
    async insert(write, now) {
      return uniqueName(write.name, () => insertTx.immediate(write, now));
    },
    async update(name, change, now) {
      return uniqueName(name, () => updateTx.immediate(name, change, now));
    },
    async delete(name) {
      try {
        deleteTx.immediate(name);
      } catch (error) {
        // A server took it between the check and the delete (another process): the foreign key says so.
        if (isForeignKeyViolation(error)) throw credentialInUse(name, []);
        throw error;
      }
    },
    async sealed(id) {
      const row = q.sealed.get(id);
      return row && { name: row.name, kind: row.kind, userName: row.user_name, secret: row.secret };
    },
    async resealSecrets(reseal) {
      return resealTx.immediate(reseal);
    },
  });

  function uniqueName<T>(name: string, write: () => T): T {
    try {
      return write();
    } catch (error) {
      throw credentialWriteFailure(name, error);
    }
  }
}

/** conflict CREDENTIAL_IN_USE naming (up to 10 of) the servers that use it (both databases). */
export function credentialInUse(name: string, servers: readonly string[]): DomainError {
  const shown = servers.slice(0, 10).join(", ") + (servers.length > 10 ? ", ..." : "");
  const by = servers.length === 0 ? "a server" : `server${servers.length === 1 ? "" : "s"} ${shown}`;
  return conflict(
    "CREDENTIAL_IN_USE",
    `The credential '${name}' is used by ${by}: change or delete those servers first.`,
  );
}

export function toCredential(row: CredentialRow): Credential {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    userName: row.user_name,
    createdAt: row.created_at,
    modifiedAt: row.modified_at,
  };
}

/** What the SSH transport logs in with; opened only to connect. */
export interface OpenedCredential {
  readonly userName: string;
  readonly privateKey?: string;
  readonly password?: string;
}

/** The runtime's view of stored credentials (plan13.md): a reference by name, and the secret by id to connect. */
export interface CredentialsStore {
  findByName(name: string): Promise<{ id: number; name: string } | undefined>;
  /**
   * The user name and secret, for the SSH executor only; throws not_found CREDENTIAL_NOT_FOUND, or
   * unavailable CREDENTIAL_UNREADABLE when no configured secret key opens it.
   */
  open(id: number): Promise<OpenedCredential>;
}

export function createCredentialsStore(repository: CredentialsRepository, secrets: SecretBox): CredentialsStore {
  return {
    async findByName(name) {
      const credential = await repository.findByName(name);
      return credential && { id: credential.id, name: credential.name };
    },
    async open(id) {
      const row = await repository.sealed(id);
      if (row === undefined) throw notFound("CREDENTIAL_NOT_FOUND", `The credential with id ${id} no longer exists.`);
      let secret: string;
      try {
        secret = secrets.open(row.secret, SEALED_PURPOSE);
      } catch (error) {
        if (!(error instanceof SecretUnreadableError)) throw error;
        throw new DomainError(
          "unavailable",
          "CREDENTIAL_UNREADABLE",
          `The secret of credential '${row.name}' cannot be decrypted: ${error.message}.`,
        );
      }
      return row.kind === "ssh-key"
        ? { userName: row.userName, privateKey: secret }
        : { userName: row.userName, password: secret };
    },
  };
}
