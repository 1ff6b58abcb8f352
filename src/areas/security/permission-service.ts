import { ATTRIBUTES, type Attribute, FEED_ATTRIBUTES, findAttribute } from "../../domain/attributes.js";
import { invalid, notFound } from "../../domain/errors.js";
import type { FeedService } from "../management/index.js";
import { ANONYMOUS_NAME, type AttributeView, type PermissionView, type TaskView } from "./model.js";
import type { PermissionPrincipal, PermissionRecord, PermissionRepository } from "./permission-repository.js";
import type { UserRepository } from "./user-repository.js";
import { boundedText, fieldError, optionalText, requiredName, sameName } from "./validation.js";

/** SecurityTask as clients send it to `/api/security/tasks/add`. */
export interface TaskInput {
  readonly name?: string | null;
  readonly description?: string | null;
  /** Defaults to whether every attribute may be scoped to a feed. */
  readonly feedScoped?: boolean | null;
  readonly attributes?: readonly (string | null)[] | null;
}

/** SecurityPermission as clients send it to `/api/security/permissions/add`; `id` is ignored. */
export interface PermissionInput {
  /** A user name, or "Anonymous" for everyone. */
  readonly user?: string | null;
  readonly group?: string | null;
  readonly task?: string | null;
  readonly feed?: string | null;
  readonly feedGroup?: string | null;
  readonly deny?: boolean | null;
}

export interface PermissionService {
  /** Every privilege attribute Wharf knows (docs/compat.md section 9), with whether it may be feed-scoped. */
  listAttributes(): AttributeView[];
  listTasks(): Promise<TaskView[]>;
  /** Adds a custom task; attributes are matched case-insensitively and stored in canonical spelling. */
  addTask(input: TaskInput): Promise<TaskView>;
  /** Deletes a custom task and every permission that uses it; built-in tasks are refused (400). */
  deleteTask(name: string): Promise<void>;
  listPermissions(): Promise<PermissionView[]>;
  addPermission(input: PermissionInput): Promise<PermissionView>;
  /** Throws not_found for an unknown id. */
  removePermission(id: number): Promise<void>;
}

export interface PermissionServiceDeps {
  readonly access: PermissionRepository;
  readonly users: UserRepository;
  readonly feeds: Pick<FeedService, "findScope">;
}

export function createPermissionService({ access, users, feeds }: PermissionServiceDeps): PermissionService {
  async function principalOf(input: PermissionInput): Promise<PermissionPrincipal> {
    const user = optionalText(input.user);
    const group = optionalText(input.group);
    if ((user === undefined) === (group === undefined)) {
      throw fieldError("user", "give exactly one of user (a user name or Anonymous) or group", "PRINCIPAL_REQUIRED");
    }
    if (user !== undefined) {
      if (sameName(user, ANONYMOUS_NAME)) return { type: "anonymous" };
      const found = await users.findUser(user);
      if (!found) throw fieldError("user", `no user is named '${user}'`, "USER_NOT_FOUND");
      return { type: "user", id: found.id };
    }
    const found = await users.findGroup(group as string);
    if (!found) throw fieldError("group", `no group is named '${group}'`, "GROUP_NOT_FOUND");
    return { type: "group", id: found.id };
  }

  return {
    listAttributes() {
      return ATTRIBUTES.map((name) => ({ name, feedScoped: FEED_ATTRIBUTES.has(name) }));
    },

    async listTasks() {
      return (await access.listTasks()).map(({ id: _id, ...task }) => task);
    },

    async addTask(input) {
      const name = requiredName(input.name, "name");
      const attributes = canonicalAttributes(input.attributes);
      const scopable = attributes.every((a) => FEED_ATTRIBUTES.has(a));
      if (input.feedScoped === true && !scopable) {
        const global = attributes.find((a) => !FEED_ATTRIBUTES.has(a));
        throw fieldError("feedScoped", `'${global}' cannot be scoped to a feed`, "TASK_NOT_FEED_ATTRIBUTES");
      }
      const { id: _id, ...task } = await access.insertTask({
        name,
        description: boundedText(input.description, "description", 10_000),
        feedScoped: input.feedScoped ?? scopable,
        attributes,
      });
      return task;
    },

    async deleteTask(name) {
      const task = await access.findTask(requiredName(name, "task"));
      if (!task) throw notFound("TASK_NOT_FOUND", `No task is named '${name}'.`);
      if (task.builtIn) throw invalid("TASK_BUILT_IN", `task: '${task.name}' is built in and cannot be deleted.`);
      if (!(await access.deleteTask(task.id))) throw notFound("TASK_NOT_FOUND", `No task is named '${name}'.`);
    },

    async listPermissions() {
      return (await access.listPermissions()).map(toView);
    },

    async addPermission(input) {
      const principal = await principalOf(input);
      const taskName = requiredName(input.task, "task");
      const task = await access.findTask(taskName);
      if (!task) throw fieldError("task", `no task is named '${taskName}'`, "TASK_NOT_FOUND");
      const feedName = optionalText(input.feed);
      const feedGroup = boundedText(input.feedGroup, "feedGroup", 1000);
      if (feedName !== undefined && feedGroup !== undefined) {
        throw fieldError("feedGroup", "give either feed or feedGroup, not both", "PERMISSION_SCOPE_INVALID");
      }
      let feedId: number | undefined;
      if (feedName !== undefined) {
        feedId = (await feeds.findScope(feedName))?.id;
        if (feedId === undefined) throw fieldError("feed", `no feed is named '${feedName}'`, "FEED_NOT_FOUND");
      }
      if ((feedId !== undefined || feedGroup !== undefined) && !task.feedScoped) {
        throw fieldError("task", `'${task.name}' cannot be scoped to a feed or feed group`, "TASK_NOT_FEED_ATTRIBUTES");
      }
      const record = await access.insertPermission({
        principal,
        taskId: task.id,
        feedId,
        feedGroup: feedGroup === undefined ? undefined : { name: feedGroup },
        deny: input.deny === true,
      });
      return toView(record);
    },

    async removePermission(id) {
      if (!(await access.deletePermission(id)))
        throw notFound("PERMISSION_NOT_FOUND", `No permission has the id ${id}.`);
    },
  };
}

function canonicalAttributes(values: readonly (string | null)[] | null | undefined): Attribute[] {
  const result: Attribute[] = [];
  for (const value of values ?? []) {
    const text = optionalText(value);
    if (text === undefined) continue;
    const attribute = findAttribute(text);
    if (attribute === undefined) throw fieldError("attributes", `unknown attribute '${text}'`, "ATTRIBUTE_UNKNOWN");
    if (!result.includes(attribute)) result.push(attribute);
  }
  if (result.length === 0) throw fieldError("attributes", "at least one attribute is required", "ATTRIBUTES_REQUIRED");
  return result;
}

function toView(record: PermissionRecord): PermissionView {
  return {
    id: record.id,
    ...(record.principalType === "group"
      ? { group: record.principalName ?? "" }
      : { user: record.principalType === "anonymous" ? ANONYMOUS_NAME : (record.principalName ?? "") }),
    task: record.task,
    ...(record.feed === undefined ? {} : { feed: record.feed }),
    ...(record.feedGroup === undefined ? {} : { feedGroup: record.feedGroup }),
    deny: record.deny,
  };
}
