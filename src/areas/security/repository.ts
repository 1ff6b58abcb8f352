import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { type ApiKeyRepository, createApiKeyRepository } from "./api-key-repository.js";
import { createPermissionRepository, type PermissionRepository } from "./permission-repository.js";
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

export function createSecurityRepository(db: Db): SecurityRepository {
  return {
    users: withBusyRetries(db, createUserRepository(db)),
    access: withBusyRetries(db, createPermissionRepository(db)),
    apiKeys: withBusyRetries(db, createApiKeyRepository(db)),
  };
}
