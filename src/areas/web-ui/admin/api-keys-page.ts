import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError } from "../../../domain/errors.js";
import { FEED_KEY_PERMISSIONS, SYSTEM_APIS } from "../../../domain/principal.js";
import { STATUS_BY_KIND } from "../../../http/errors.js";
import type { ApiKeyInput } from "../../security/service.js";
import { ADMINISTER, API_KEY_TYPES, type ApiKeyView } from "../../security/model.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { formatDate } from "../pages/present.js";
import { API_KEY_CREATED, API_KEYS } from "../templates/api-keys.js";
import { defineView, sendPage } from "../views.js";
import { formFields, idParam } from "../form.js";

const API_KEYS_VIEW = defineView("api-keys", API_KEYS);
const API_KEY_CREATED_VIEW = defineView("api-key-created", API_KEY_CREATED);

const LIST_URL = "/admin/api-keys";

/** What the create form holds, shown again (escaped) when the service refuses it. */
interface FormValues {
  readonly type: string;
  readonly displayName: string;
  readonly description: string;
  readonly expiration: string;
  readonly systemApis: readonly string[];
  readonly feed: string;
  readonly feedGroup: string;
  readonly packagePermissions: readonly string[];
  readonly user: string;
}

const EMPTY_FORM: FormValues = {
  type: "System",
  displayName: "",
  description: "",
  expiration: "",
  systemApis: [],
  feed: "",
  feedGroup: "",
  packagePermissions: [],
  user: "",
};

/**
 * Administration of API keys (issue 16 section 1): GET /admin/api-keys, POST /admin/api-keys and
 * POST /admin/api-keys/:id/revoke. They read and write through the API's own ApiKeyService
 * (validation, hashing, the key shown once) and need what /api/api-keys/* need (ADMINISTER).
 */
export function registerApiKeysPage(app: FastifyInstance, { security, feeds }: WebUiDeps): void {
  const apiKeys = security.apiKeys;
  async function showList(
    request: FastifyRequest,
    reply: FastifyReply,
    form: FormValues = EMPTY_FORM,
    message?: string,
  ) {
    const [keys, allFeeds] = await Promise.all([apiKeys.list(), feeds.listFeeds()]);
    return sendPage(request, reply, API_KEYS_VIEW, {
      title: "API keys",
      keys: keys.map(presentKey),
      feeds: allFeeds.map((feed) => feed.name),
      types: API_KEY_TYPES,
      systemApis: SYSTEM_APIS,
      packagePermissions: FEED_KEY_PERMISSIONS,
      form,
      message,
    });
  }

  app.get(LIST_URL, BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    return showList(request, reply);
  });

  app.post(LIST_URL, BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    const form = formValues(request.body);
    let created;
    try {
      created = await apiKeys.create(toInput(form));
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return showList(request, reply.code(STATUS_BY_KIND[error.kind]), form, error.message);
    }
    request.log.info({ apiKey: created.id, type: created.type }, "API key created in the web UI");
    return sendPage(request, reply.code(201), API_KEY_CREATED_VIEW, {
      title: "API key created",
      name: created.displayName ?? `Key ${created.id}`,
      type: created.type,
      key: created.key,
    });
  });

  app.post(`${LIST_URL}/:id/revoke`, BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, ADMINISTER))) return reply;
    const id = idParam(request);
    if (id === undefined) return sendNotFound(request, reply, "No API key has this id.");
    try {
      await apiKeys.delete(id);
    } catch (error) {
      if (error instanceof DomainError && error.kind === "not_found")
        return sendNotFound(request, reply, error.message);
      throw error;
    }
    request.log.info({ apiKey: id }, "API key revoked in the web UI");
    return reply.redirect(LIST_URL, 303);
  });
}

/** A key as a row of the list: what it may do in words, dates readable; never the key or its hash. */
function presentKey(key: ApiKeyView) {
  let scope: string;
  if (key.type === "System") scope = (key.systemApis ?? []).join(", ");
  else if (key.type === "Feed") {
    const where = key.feed !== undefined ? `feed ${key.feed}` : `feed group ${key.feedGroup ?? ""}`;
    scope = `${(key.packagePermissions ?? []).join(", ")} on ${where}`;
  } else scope = `acts as ${key.user ?? "(deleted user)"}`;
  return {
    id: key.id,
    name: key.displayName ?? `Key ${key.id}`,
    description: key.description ?? "",
    type: key.type,
    scope,
    expires: key.expiration === undefined ? "never" : formatDate(key.expiration),
    lastUsed: key.lastUsed === undefined ? "never" : formatDate(key.lastUsed),
  };
}

/** The create form's fields. */
function formValues(body: unknown): FormValues {
  const { text, list } = formFields(body);
  return {
    type: text("type"),
    displayName: text("displayName"),
    description: text("description"),
    expiration: text("expiration"),
    systemApis: list("systemApis"),
    feed: text("feed"),
    feedGroup: text("feedGroup"),
    packagePermissions: list("packagePermissions"),
    user: text("user"),
  };
}

/**
 * The service's input: a Feed key's members only for a Feed key (and so on), as a client of the
 * API would send them; everything else is the service's to check.
 */
function toInput(form: FormValues): ApiKeyInput {
  const common = {
    type: form.type,
    displayName: form.displayName,
    description: form.description,
    // A date picked in the form: the key expires at the end of that day (UTC).
    expiration: /^\d{4}-\d{2}-\d{2}$/.test(form.expiration) ? `${form.expiration}T23:59:59Z` : form.expiration,
  };
  switch (form.type.trim().toLowerCase()) {
    case "system":
      return { ...common, systemApis: form.systemApis };
    case "feed":
      return { ...common, feed: form.feed, feedGroup: form.feedGroup, packagePermissions: form.packagePermissions };
    case "personal":
      return { ...common, user: form.user };
    default:
      return common;
  }
}
