import type { Clock } from "../../domain/clock.js";
import type { MetadataDb } from "../../storage/metadata-db.js";
import type { FeedService } from "../management/index.js";
import { type ApiKeyService, createApiKeyService } from "./api-key-service.js";
import { createPermissionService, type PermissionService } from "./permission-service.js";
import { createSecurityRepository } from "./repository.js";
import { createUserService, type UserService } from "./user-service.js";

export type { ApiKeyInput, ApiKeyService } from "./api-key-service.js";
export type { PermissionInput, PermissionService, TaskInput } from "./permission-service.js";
export type { GroupInput, UserInput, UserService } from "./user-service.js";

/** The security use cases, shared by the HTTP routes and the `wharf` CLI. */
export interface SecurityServices {
  readonly apiKeys: ApiKeyService;
  readonly users: UserService;
  readonly permissions: PermissionService;
}

export interface SecurityServiceDeps {
  /** The data directory's SQLite or a cluster's PostgreSQL: the repositories are picked for it. */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly feeds: Pick<FeedService, "findScope">;
}

export function createSecurityServices({ db, clock, feeds }: SecurityServiceDeps): SecurityServices {
  const repository = createSecurityRepository(db);
  return {
    apiKeys: createApiKeyService({ keys: repository.apiKeys, users: repository.users, clock, feeds }),
    users: createUserService({ users: repository.users, clock }),
    permissions: createPermissionService({ access: repository.access, users: repository.users, feeds }),
  };
}
