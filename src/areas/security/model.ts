import type { AccessNeed } from "../../domain/principal.js";

/**
 * The security area's objects as ProGet's security and API-key APIs show them (pgutil's
 * ApiKeyInfo, SecurityUser, SecurityGroup, SecurityTask, SecurityTaskAttribute and
 * SecurityPermission, docs/compat.md 5.4). Optional members are omitted rather than null; passwords and
 * key hashes never appear here.
 */

export const API_KEY_TYPES = ["System", "Feed", "Personal"] as const;
export type ApiKeyType = (typeof API_KEY_TYPES)[number];

export const LOGGING_MODES = ["None", "Request", "Response", "Both"] as const;
export type LoggingMode = (typeof LOGGING_MODES)[number];

export interface ApiKeyView {
  readonly id: number;
  readonly type: ApiKeyType;
  readonly displayName?: string;
  readonly description?: string;
  readonly systemApis?: string[];
  readonly packagePermissions?: string[];
  readonly feed?: string;
  readonly feedGroup?: string;
  readonly expiration?: string;
  readonly logging: LoggingMode;
  /** Name of the user a Personal key acts as. */
  readonly user?: string;
  /** Wharf extension: when the key last authenticated a request (written at most once a minute). */
  readonly lastUsed?: string;
}

/** A key as answered by create: the only time the key itself is shown. */
export interface CreatedApiKey extends ApiKeyView {
  readonly key: string;
}

export interface UserView {
  readonly name: string;
  readonly displayName?: string;
  readonly email?: string;
  readonly groups: string[];
}

export interface GroupView {
  readonly name: string;
  readonly users: string[];
}

export interface TaskView {
  readonly name: string;
  readonly description?: string;
  readonly feedScoped: boolean;
  readonly attributes: string[];
  /** Wharf extension: built-in tasks cannot be deleted. */
  readonly builtIn: boolean;
}

export interface AttributeView {
  readonly name: string;
  readonly feedScoped: boolean;
}

export interface PermissionView {
  readonly id: number;
  /** A user name, or "Anonymous" for a permission of everyone. */
  readonly user?: string;
  readonly group?: string;
  readonly task: string;
  readonly feed?: string;
  readonly feedGroup?: string;
  readonly deny: boolean;
}

/** The principal name that stands for everyone in a permission (ProGet's "Anonymous" user). */
export const ANONYMOUS_NAME = "Anonymous";

/**
 * Every endpoint of this area needs it (ProGet security API docs: System keys need full control,
 * users and personal keys Admin_ConfigureProGet; Feed keys never pass).
 */
export const ADMINISTER: AccessNeed = { api: "full-control", attribute: "Admin_ConfigureProGet" };
