import { withBusyRetries } from "../../storage/busy.js";
import { byDatabase, cacheVersionOf, type MetadataDb } from "../../storage/metadata-db.js";
import { createPostgresApiKeyRepository } from "./api-key-repository-postgres.js";
import { type ApiKeyRepository, createApiKeyRepository } from "./api-key-repository.js";
import { createPostgresAuthRepository } from "./auth-repository-postgres.js";
import { type AuthRepository, createAuthRepository } from "./auth-repository.js";
import { createPostgresPermissionRepository } from "./permission-repository-postgres.js";
import { createPermissionRepository, type PermissionRepository } from "./permission-repository.js";
import { createPostgresUserRepository } from "./user-repository-postgres.js";
import { createUserRepository, type UserRepository } from "./user-repository.js";

/**
 * SQL for the security tables (users, groups, group_members, tasks, permissions, api_keys), one
 * file per sub-resource. Every method is one transaction and returns a Promise (docs/STYLE.md "Data").
 * Names are matched through their lowercased `name_key` columns.
 */
export interface SecurityRepository {
  readonly users: UserRepository;
  readonly access: PermissionRepository;
  readonly apiKeys: ApiKeyRepository;
}

/**
 * The security repositories of the database at hand: SQLite's retry while another process (the
 * CLI) holds the write lock; PostgreSQL's (cluster mode) lock what they read and write instead.
 */
export function createSecurityRepository(db: MetadataDb): SecurityRepository {
  return byDatabase<SecurityRepository>(
    db,
    (sqlite) => ({
      users: withBusyRetries(sqlite, createUserRepository(sqlite)),
      access: withBusyRetries(sqlite, createPermissionRepository(sqlite)),
      apiKeys: withBusyRetries(sqlite, createApiKeyRepository(sqlite)),
    }),
    (postgres) => ({
      users: createPostgresUserRepository(postgres),
      access: createPostgresPermissionRepository(postgres),
      apiKeys: createPostgresApiKeyRepository(postgres),
    }),
  );
}

/**
 * What authentication reads (keys, sign-ins, grants) on the database at hand. Its answers are
 * cached under the database's change version (cacheVersionOf): on PostgreSQL, the node's change
 * feed, which must be attached (storage/postgres/node-database.ts) before this is called.
 */
export function createAuthRepositoryOf(db: MetadataDb): AuthRepository {
  return byDatabase(db, createAuthRepository, (postgres) =>
    createPostgresAuthRepository(postgres, cacheVersionOf(postgres)),
  );
}
