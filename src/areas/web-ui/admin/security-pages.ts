import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ADMINISTER } from "../../security/model.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { defineView, sendPage } from "../views.js";
import { backTo, type FormFields, formFields, idParam, orRefused, splitList } from "../form.js";
import { ADMIN_PERMISSIONS, ADMIN_USERS } from "./security-templates.js";

const USERS_VIEW = defineView("admin-users", ADMIN_USERS);
const PERMISSIONS_VIEW = defineView("admin-permissions", ADMIN_PERMISSIONS);

const EMPTY_USER = { name: "", displayName: "", email: "" };
const EMPTY_GRANT = { user: "", group: "", task: "", feed: "", feedGroup: "", deny: false };

/** An optional text field: blank sends nothing (the service keeps or omits it). */
const optional = (fields: FormFields, name: string) => (fields.text(name) === "" ? undefined : fields.text(name));

/**
 * Users, groups and permissions through the security API's services (UserService,
 * PermissionService), with its need (ADMINISTER) on every page and action. Passwords are write-only:
 * never rendered, a blank one leaves the stored one alone.
 */
export function registerSecurityPages(app: FastifyInstance, { security }: WebUiDeps): void {
  const { users, permissions } = security;

  async function showUsers(request: FastifyRequest, reply: FastifyReply, form = EMPTY_USER, message?: string) {
    const [all, groups] = await Promise.all([users.listUsers(), users.listGroups()]);
    return sendPage(request, reply, USERS_VIEW, {
      title: "Users and groups",
      users: all.map((u) => ({
        name: u.name,
        displayName: u.displayName ?? "",
        email: u.email ?? "",
        groups: u.groups,
      })),
      groups,
      form,
      message,
    });
  }

  /** One ADMINISTER-guarded form post: the service call, then back to `url`, or the page again with its refusal. */
  function action(
    url: string,
    run: (fields: FormFields) => Promise<unknown>,
    showAgain: (request: FastifyRequest, reply: FastifyReply, fields: FormFields, message: string) => Promise<unknown>,
    back: string,
  ) {
    app.post(url, BROWSE_PAGE, async (request, reply) => {
      if (!(await requireView(request, reply, ADMINISTER))) return reply;
      const fields = formFields(request.body);
      const done = await orRefused(
        reply,
        () => run(fields),
        (message) => showAgain(request, reply, fields, message),
      );
      if (done === undefined) return reply;
      request.log.info({ action: url }, "security changed in the web UI");
      return backTo(reply, back);
    });
  }
  const usersAgain = (request: FastifyRequest, reply: FastifyReply, fields: FormFields, message: string) =>
    showUsers(
      request,
      reply,
      { name: fields.text("name"), displayName: fields.text("displayName"), email: fields.text("email") },
      message,
    );

  app.get("/admin/users", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    return showUsers(request, reply);
  });
  action(
    "/admin/users",
    (f) =>
      users.addUser({
        name: f.text("name"),
        displayName: optional(f, "displayName"),
        email: optional(f, "email"),
        password: optional(f, "password"),
      }),
    usersAgain,
    "/admin/users",
  );
  action(
    "/admin/users/edit",
    (f) =>
      users.editUser({
        name: f.text("name"),
        displayName: f.text("displayName"),
        email: f.text("email"),
        password: optional(f, "password"),
        groups: splitList(f.text("groups")),
      }),
    (request, reply, _fields, message) => showUsers(request, reply, EMPTY_USER, message),
    "/admin/users",
  );
  action("/admin/users/delete", (f) => users.deleteUser(f.text("name")), usersAgain, "/admin/users");
  action(
    "/admin/groups",
    (f) => users.saveGroup({ name: f.text("name"), users: splitList(f.text("users")) }),
    (request, reply, _fields, message) => showUsers(request, reply, EMPTY_USER, message),
    "/admin/users",
  );
  action("/admin/groups/delete", (f) => users.deleteGroup(f.text("name")), usersAgain, "/admin/users");

  async function showPermissions(request: FastifyRequest, reply: FastifyReply, form = EMPTY_GRANT, message?: string) {
    const [all, tasks] = await Promise.all([permissions.listPermissions(), permissions.listTasks()]);
    return sendPage(request, reply, PERMISSIONS_VIEW, {
      title: "Permissions",
      permissions: all.map((p) => ({
        id: p.id,
        who: p.user !== undefined ? `user ${p.user}` : `group ${p.group ?? ""}`,
        task: p.task,
        where:
          p.feed !== undefined
            ? `feed ${p.feed}`
            : p.feedGroup !== undefined
              ? `feed group ${p.feedGroup}`
              : "everywhere",
        deny: p.deny,
      })),
      tasks: tasks.map((task) => task.name),
      form,
      message,
    });
  }

  app.get("/admin/permissions", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    return showPermissions(request, reply);
  });
  action(
    "/admin/permissions",
    (f) =>
      permissions.addPermission({
        user: optional(f, "user"),
        group: optional(f, "group"),
        task: f.text("task"),
        feed: optional(f, "feed"),
        feedGroup: optional(f, "feedGroup"),
        deny: f.checked("deny"),
      }),
    (request, reply, f, message) =>
      showPermissions(
        request,
        reply,
        {
          user: f.text("user"),
          group: f.text("group"),
          task: f.text("task"),
          feed: f.text("feed"),
          feedGroup: f.text("feedGroup"),
          deny: f.checked("deny"),
        },
        message,
      ),
    "/admin/permissions",
  );

  app.post("/admin/permissions/:id/revoke", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    const id = idParam(request);
    if (id === undefined) return sendNotFound(request, reply, "No permission has this id.");
    const done = await orRefused(
      reply,
      () => permissions.removePermission(id),
      async (message) => sendNotFound(request, reply, message),
    );
    if (done === undefined) return reply;
    request.log.info({ permission: id }, "permission revoked in the web UI");
    return backTo(reply, "/admin/permissions");
  });
}
