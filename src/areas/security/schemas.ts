import { z } from "zod";
import { API_KEY_TYPES, LOGGING_MODES } from "./model.js";
import { errorText } from "../../http/errors.js";

/**
 * Request and response shapes of the API-key and security APIs (docs/compat.md 5.4; pgutil's
 * ApiKeyInfo, SecurityUser, SecurityGroup, SecurityTask, SecurityTaskAttribute and
 * SecurityPermission, camelCase). Inputs check JSON types only and let unknown members through;
 * the rules are the services', so that the CLI gets the same checks. Outputs are exact: the
 * serializer drops anything not listed, so a password or key hash can never leak through them.
 */

export { errorText };
export const emptyBody = z.void().describe("Empty body");

const text = (max: number) => z.string().max(max);
const nameList = z.array(text(1000).nullable()).max(10_000);

export const apiKeyInputSchema = z
  .object({
    id: z.unknown().optional().describe("Ignored: the server assigns ids"),
    type: text(100).nullish().describe("Required: System, Feed or Personal (case-insensitive)"),
    key: text(1000)
      .nullish()
      .describe("Optional key of your choosing: 16+ printable characters without spaces or ':'; generated when absent"),
    displayName: text(1000).nullish(),
    description: text(10_000).nullish(),
    systemApis: z
      .array(text(100).nullable())
      .max(50)
      .nullish()
      .describe("System keys: full-control, feeds, configuration, package-deployment, connector-health, releases, ..."),
    packagePermissions: z
      .array(text(100).nullable())
      .max(10)
      .nullish()
      .describe("Feed keys: view, add, promote, delete"),
    feed: text(1000).nullish().describe("Feed keys: the feed (exclusive with feedGroup)"),
    feedGroup: text(1000).nullish().describe("Feed keys: the feed group (exclusive with feed)"),
    expiration: text(100).nullish().describe("ISO 8601 date in the future; none means the key never expires"),
    logging: text(100)
      .nullish()
      .describe(
        "None (the default) or null; Request, Response and Both are refused: request logging is not implemented yet",
      ),
    user: text(1000).nullish().describe("Personal keys: the user the key acts as"),
  })
  .loose();

export const apiKeyInfoSchema = z.object({
  id: z.int(),
  type: z.enum(API_KEY_TYPES),
  key: z.string().optional().describe("Only in the answer to create: the one time the key is shown"),
  displayName: z.string().optional(),
  description: z.string().optional(),
  systemApis: z.array(z.string()).optional(),
  packagePermissions: z.array(z.string()).optional(),
  feed: z.string().optional(),
  feedGroup: z.string().optional(),
  expiration: z.string().optional(),
  logging: z
    .enum(LOGGING_MODES)
    .describe("None: request logging is not implemented (keys of an older Wharf may say otherwise)"),
  user: z.string().optional(),
  lastUsed: z.string().optional().describe("Wharf extension: last use, written at most once a minute"),
});

export const userInputSchema = z
  .object({
    name: text(1000).nullish().describe("Required; unique case-insensitively; 'Anonymous' is reserved"),
    displayName: text(1000).nullish(),
    email: text(1000).nullish(),
    mail: text(1000).nullish().describe("Same as email (ProGet's documentation spells it so)"),
    password: text(1024).nullish().describe("Stored as a salted scrypt hash; never returned"),
    groups: nameList.nullish().describe("When given, replaces the user's group memberships"),
  })
  .loose();

export const userSchema = z.object({
  name: z.string(),
  displayName: z.string().optional(),
  email: z.string().optional(),
  groups: z.array(z.string()),
});

export const groupInputSchema = z
  .object({
    name: text(1000).nullish().describe("Required"),
    users: nameList.nullish().describe("When given, replaces the group's members"),
    user: nameList.nullish().describe("Same as users (ProGet's documentation spells it so)"),
  })
  .loose();

export const groupSchema = z.object({ name: z.string(), users: z.array(z.string()) });

export const taskInputSchema = z
  .object({
    name: text(1000).nullish().describe("Required; unique case-insensitively"),
    description: text(10_000).nullish(),
    feedScoped: z
      .boolean()
      .nullish()
      .describe("Whether the task may be granted per feed; defaults from its attributes"),
    attributes: z
      .array(text(200).nullable())
      .max(200)
      .nullish()
      .describe("Required: attribute names (case-insensitive)"),
  })
  .loose();

export const taskSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  feedScoped: z.boolean(),
  attributes: z.array(z.string()),
  builtIn: z.boolean().describe("Wharf extension: built-in tasks cannot be deleted"),
});

export const attributeSchema = z.object({ name: z.string(), feedScoped: z.boolean() });

export const permissionInputSchema = z
  .object({
    id: z.unknown().optional().describe("Ignored: the server assigns ids"),
    user: text(1000).nullish().describe("A user name, or Anonymous for everyone (exclusive with group)"),
    group: text(1000).nullish().describe("A group name (exclusive with user)"),
    task: text(1000).nullish().describe("Required: a task name"),
    feed: text(1000).nullish().describe("Scope to one feed (exclusive with feedGroup); none means global"),
    feedGroup: text(1000).nullish().describe("Scope to a feed group (exclusive with feed)"),
    deny: z.boolean().nullish().describe("A deny wins over any grant"),
  })
  .loose();

export const permissionSchema = z.object({
  id: z.int(),
  user: z.string().optional(),
  group: z.string().optional(),
  task: z.string(),
  feed: z.string().optional(),
  feedGroup: z.string().optional(),
  deny: z.boolean(),
});

/** Query strings: documented names; any spelling of their case is accepted (docs/compat.md 0.1). */
export const idQuery = z
  .object({ id: z.string().optional().describe("The id") })
  .loose()
  .describe("Query");
export const searchQuery = z
  .object({
    "search-term": z.string().optional().describe("Only users whose name, display name or e-mail contains it"),
  })
  .loose();
