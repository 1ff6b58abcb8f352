import type pg from "pg";
import { inTransaction, type PostgresDb, readRows } from "../../storage/postgres/database.js";
import { isForeignKeyViolation } from "../../storage/sqlite-errors.js";
import {
  type CredentialKind,
  credentialInUse,
  credentialNameTaken,
  credentialNotFound,
  type CredentialRow,
  type CredentialsRepository,
  type CredentialWrite,
  credentialWriteFailure,
  CREDENTIAL_COLUMNS,
  toCredential,
} from "./credentials-repository.js";

/**
 * CredentialsRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite.
 * "By name, case-insensitively" (list, the servers of CREDENTIAL_IN_USE): SQLite's `COLLATE NOCASE`
 * folds ASCII letters only; so does lower() of a COLLATE "C" column
 * (migrations/postgres/0001-baseline.sql), and "C" then compares as SQLite's BINARY does.
 */
export function createPostgresCredentialsRepository(db: PostgresDb): CredentialsRepository {
  const byId = async (client: pg.PoolClient, id: number) =>
    toCredential(
      (await client.query<CredentialRow>(`SELECT ${CREDENTIAL_COLUMNS} FROM credentials WHERE id = $1`, [id]))
        .rows[0] as CredentialRow,
    );

  return {
    async list() {
      return (
        await readRows<CredentialRow>(db, `SELECT ${CREDENTIAL_COLUMNS} FROM credentials ORDER BY lower(name), id`)
      ).map(toCredential);
    },
    async findByName(name) {
      const [row] = await readRows<CredentialRow>(
        db,
        `SELECT ${CREDENTIAL_COLUMNS} FROM credentials WHERE name_key = $1`,
        [name.toLowerCase()],
      );
      return row && toCredential(row);
    },
    async insert(write, now) {
      try {
        return await inTransaction(db, async (client) => {
          // The check gives the owner's spelling, as on SQLite; a name taken by another node after
          // it fails on the unique index, and ends in the same conflict.
          const [owner] = (
            await client.query<{ name: string }>("SELECT name FROM credentials WHERE name_key = $1", [
              write.name.toLowerCase(),
            ])
          ).rows;
          if (owner) throw credentialNameTaken(owner.name);
          const inserted = await client.query<{ id: number }>(
            `INSERT INTO credentials (name, name_key, kind, user_name, secret, created_at, modified_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id`,
            [write.name, write.name.toLowerCase(), write.kind, write.userName, write.sealedSecret, now],
          );
          return byId(client, (inserted.rows[0] as { id: number }).id);
        });
      } catch (error) {
        throw credentialWriteFailure(write.name, error);
      }
    },
    async update(name, change, now) {
      try {
        return await inTransaction(db, async (client) => {
          // Locked: `change` sees the row as it is written over; a concurrent update of the same
          // credential waits, then reads this one's result (or nothing, renamed or deleted: not_found).
          const [row] = (
            await client.query<CredentialRow>(
              `SELECT ${CREDENTIAL_COLUMNS} FROM credentials WHERE name_key = $1 FOR UPDATE`,
              [name.toLowerCase()],
            )
          ).rows;
          if (!row) throw credentialNotFound(name);
          const current = toCredential(row);
          const next: Partial<CredentialWrite> = change(current);
          const newName = next.name ?? current.name;
          const [owner] = (
            await client.query<{ id: number; name: string }>("SELECT id, name FROM credentials WHERE name_key = $1", [
              newName.toLowerCase(),
            ])
          ).rows;
          if (owner && owner.id !== current.id) throw credentialNameTaken(owner.name);
          await client.query(
            `UPDATE credentials SET name = $1, name_key = $2, kind = $3, user_name = $4, secret = coalesce($5, secret),
             modified_at = $6 WHERE id = $7`,
            [
              newName,
              newName.toLowerCase(),
              next.kind ?? current.kind,
              next.userName ?? current.userName,
              next.sealedSecret ?? null,
              now,
              current.id,
            ],
          );
          return byId(client, current.id);
        });
      } catch (error) {
        // As on SQLite: the conflict of a name taken meanwhile names the credential being updated.
        throw credentialWriteFailure(name, error);
      }
    },
    async delete(name) {
      try {
        await inTransaction(db, async (client) => {
          // FOR UPDATE conflicts with the key-share lock a server's foreign key check takes: a server
          // saved with this credential meanwhile either committed before the lock (and is listed
          // below) or waits for this delete and then fails its own check (REFERENCE_GONE).
          const [row] = (
            await client.query<{ id: number; name: string }>(
              "SELECT id, name FROM credentials WHERE name_key = $1 FOR UPDATE",
              [name.toLowerCase()],
            )
          ).rows;
          if (!row) throw credentialNotFound(name);
          const users = (
            await client.query<{ name: string }>(
              "SELECT name FROM servers WHERE credentials_id = $1 ORDER BY lower(name) LIMIT 11",
              [row.id],
            )
          ).rows.map((server) => server.name);
          if (users.length > 0) throw credentialInUse(row.name, users);
          await client.query("DELETE FROM credentials WHERE id = $1", [row.id]);
        });
      } catch (error) {
        if (isForeignKeyViolation(error)) throw credentialInUse(name, []);
        throw error;
      }
    },
    async sealed(id) {
      const [row] = await readRows<{ name: string; kind: CredentialKind; user_name: string; secret: string }>(
        db,
        "SELECT name, kind, user_name, secret FROM credentials WHERE id = $1",
        [id],
      );
      return row && { name: row.name, kind: row.kind, userName: row.user_name, secret: row.secret };
    },
    async resealSecrets(reseal) {
      return inTransaction(db, async (client) => {
        // Locked, in id order: an update's new secret is never overwritten by the reseal of the old one.
        const rows = (
          await client.query<{ id: number; name: string; secret: string }>(
            "SELECT id, name, secret FROM credentials ORDER BY id FOR UPDATE",
          )
        ).rows;
        let count = 0;
        for (const row of rows) {
          const sealed = reseal(row.name, row.secret);
          if (sealed !== undefined && sealed !== row.secret) {
            count +=
              (await client.query("UPDATE credentials SET secret = $1 WHERE id = $2", [sealed, row.id])).rowCount ?? 0;
          }
        }
        return count;
      });
    },
  };
}
