import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError } from "../../../domain/errors.js";
import { STATUS_BY_KIND } from "../../../http/errors.js";
import { needOnFeed } from "../../../domain/principal.js";
import { scopeOf } from "../../management/index.js";
import { ADMINISTER } from "../../security/model.js";
import { callerOf, type WebhookInput, type WebhookView } from "../../webhooks/index.js";
import type { Delivery } from "../../webhooks/model.js";
import { WEBHOOK_EVENTS, WEBHOOK_METHODS } from "../../webhooks/model.js";
import { backTo, type FormFields, formFields, idParam, orRefused } from "../form.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound, sendStatus } from "../pages/access.js";
import { formatDate, queryText } from "../pages/present.js";
import { defineView, sendPage } from "../views.js";
import { WEBHOOK, WEBHOOKS } from "./templates.js";

const LIST_VIEW = defineView("webhooks", WEBHOOKS);
const DETAIL_VIEW = defineView("webhook", WEBHOOK);
const LIST_URL = "/admin/webhooks";

/** A form's own refusal (no API has it): the page again, with the message, 400. */
class Unconfirmed extends Error {}

/** Anonymous is sent to sign in, coming back here after (as requireView does). */
const signInFirst = (request: FastifyRequest, reply: FastifyReply) =>
  reply.redirect(`/sign-in?next=${encodeURIComponent(request.url)}`, 303);

/** What the form holds, shown again (escaped) when the service refuses it. */
interface FormValues {
  readonly feed: string;
  readonly name: string;
  readonly url: string;
  readonly method: string;
  readonly events: readonly string[];
  readonly headers: string;
  readonly active: boolean;
}

const EMPTY_FORM: FormValues = {
  feed: "",
  name: "",
  url: "",
  method: "POST",
  events: WEBHOOK_EVENTS,
  headers: "",
  active: true,
};

function formOf(f: FormFields): FormValues {
  return {
    feed: f.text("feed"),
    name: f.text("name"),
    url: f.text("url"),
    method: f.text("method"),
    events: f.list("events"),
    headers: f.text("headers"),
    active: f.checked("active"),
  };
}

function valuesOf(webhook: WebhookView): FormValues {
  return {
    feed: webhook.feed ?? "",
    name: webhook.name,
    url: webhook.url,
    method: webhook.method,
    events: webhook.events,
    headers: Object.entries(webhook.headers)
      .map(([name, value]) => `${name}: ${value}`)
      .join("\n"),
    active: webhook.active,
  };
}

/** The form as the API's body: "Name: value" lines become the headers object (the service checks them). */
function inputOf(form: FormValues, secret: string): WebhookInput {
  const headers: Record<string, string> = {};
  for (const line of form.headers.split(/\r?\n/)) {
    if (line.trim() === "") continue;
    const colon = line.indexOf(":");
    if (colon <= 0)
      throw new DomainError(
        "invalid",
        "WEBHOOK_HEADER_REFUSED",
        `'${line.slice(0, 100)}' is not a "Name: value" header line.`,
      );
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  if (form.events.length === 0) throw new DomainError("invalid", "WEBHOOK_EVENTS_INVALID", "Pick at least one event.");
  return {
    name: form.name,
    url: form.url,
    method: form.method,
    events: form.events,
    headers,
    active: form.active,
    ...(secret === "" ? {} : { secret }),
  };
}

function answerOf(delivery: Delivery): string {
  if (delivery.attempts === 0) return "not sent yet";
  const status = delivery.lastStatus === undefined ? "" : `HTTP ${delivery.lastStatus}`;
  const error = delivery.lastError === undefined || (delivery.lastStatus ?? 0) < 300 ? "" : delivery.lastError;
  const parts = [status, error].filter((part) => part !== "").join(": ");
  return `${parts}${delivery.lastDurationMs === undefined ? "" : ` (${delivery.lastDurationMs} ms)`}`;
}

/** A delivery's JSON body, indented to be read. */
function indented(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/**
 * Webhooks for those who may manage them (issue 17 section 5): the list with a create form, and a
 * page per webhook (edit, test, delete, delivery log). Everything goes through the webhooks API's
 * service with the request as its caller, so each page and action asks exactly what the API asks
 * (a global webhook: Admin_ConfigureProGet; a feed's: Admin_ManageFeed there).
 */
export function registerWebhookPages(app: FastifyInstance, { webhooks, feeds }: WebUiDeps): void {
  /** The feeds the viewer may attach a webhook to, and whether a global one. */
  async function choices(request: FastifyRequest) {
    const manageable: string[] = [];
    for (const feed of await feeds.listFeeds()) {
      if (await request.can(needOnFeed("Admin_ManageFeed", scopeOf(feed)))) manageable.push(feed.name);
    }
    return { feeds: manageable, canGlobal: await request.can(ADMINISTER) };
  }

  const common = { methods: WEBHOOK_METHODS, events: WEBHOOK_EVENTS };

  async function showList(request: FastifyRequest, reply: FastifyReply, form = EMPTY_FORM, message?: string) {
    const { feeds: manageable, canGlobal } = await choices(request);
    // Nothing to manage: what requireView answers (sign in, or 403).
    if (!canGlobal && manageable.length === 0) {
      await requireView(request, reply, ADMINISTER);
      return reply;
    }
    const list = await webhooks.list(callerOf(request));
    return sendPage(request, reply, LIST_VIEW, {
      ...common,
      title: "Webhooks",
      webhooks: list.map((w) => ({
        ...w,
        href: `${LIST_URL}/${w.id}`,
        feed: w.feed ?? "All feeds",
        events: w.events.length === WEBHOOK_EVENTS.length ? "all" : w.events.join(", "),
      })),
      feeds: manageable,
      canGlobal,
      form,
      secretHint: "blank: one is generated and shown once",
      message,
    });
  }

  /** A refusal of the service as a page: sign in (Anonymous), 403, 404, or the status the APIs give it. */
  async function refused(request: FastifyRequest, reply: FastifyReply, error: unknown) {
    if (!(error instanceof DomainError)) throw error;
    if (error.kind === "not_found") return sendNotFound(request, reply, error.message);
    if (error.kind === "unauthenticated" || error.kind === "forbidden") {
      if (request.principal.type === "anonymous") return signInFirst(request, reply);
      return sendStatus(request, reply, 403, "Forbidden", "You may not manage this webhook.");
    }
    return sendStatus(request, reply, STATUS_BY_KIND[error.kind], "Refused", error.message);
  }

  async function showOne(
    request: FastifyRequest,
    reply: FastifyReply,
    id: number,
    extra: { secret?: string; form?: FormValues; message?: string } = {},
  ) {
    let webhook: WebhookView;
    let deliveries: Delivery[];
    try {
      webhook = await webhooks.get(id, callerOf(request));
      deliveries = await webhooks.deliveries(id, callerOf(request), { limit: 50 });
    } catch (error) {
      return refused(request, reply, error);
    }
    const testedId = Number(queryText(request.query, "tested"));
    const tested = deliveries.find((d) => d.id === testedId);
    return sendPage(request, reply, DETAIL_VIEW, {
      ...common,
      title: `Webhook ${webhook.name}`,
      webhook: {
        ...webhook,
        href: `${LIST_URL}/${webhook.id}`,
        feed: webhook.feed ?? "All feeds (global)",
        created: formatDate(webhook.createdAt),
      },
      form: extra.form ?? valuesOf(webhook),
      secretHint: "blank: unchanged",
      secret: extra.secret,
      message: extra.message,
      tested: tested === undefined ? undefined : { state: tested.state, answer: answerOf(tested) },
      deliveries: deliveries.map((d) => ({
        id: d.id,
        created: formatDate(d.createdAt),
        event: d.eventType,
        state: d.state,
        attempts: d.attempts,
        answer: answerOf(d),
        url: d.requestUrl,
        body: indented(d.requestBody),
        next: d.state === "pending" && d.nextAttemptAt !== undefined ? formatDate(d.nextAttemptAt) : "",
      })),
    });
  }

  app.get(LIST_URL, BROWSE_PAGE, async (request, reply) => showList(request, reply));

  app.post(LIST_URL, BROWSE_PAGE, async (request, reply) => {
    const f = formFields(request.body);
    const form = formOf(f);
    const done = await orRefused(
      reply,
      () =>
        webhooks.create(
          { ...inputOf(form, f.text("secret")), feed: form.feed === "" ? null : form.feed },
          callerOf(request),
        ),
      (message) => showList(request, reply, form, message),
    );
    if (done === undefined) return reply;
    request.log.info({ webhook: done.value.webhook.id }, "webhook created in the web UI");
    return showOne(request, reply.code(201), done.value.webhook.id, { secret: done.value.secret });
  });

  app.get(`${LIST_URL}/:id`, BROWSE_PAGE, async (request, reply) => {
    const id = idParam(request);
    if (id === undefined) return sendNotFound(request, reply, "There is no such webhook.");
    return showOne(request, reply, id);
  });

  /** An action on one webhook: refused input shows the page again with the message. */
  const action = (suffix: string, run: (id: number, f: FormFields, request: FastifyRequest) => Promise<string>) =>
    app.post(`${LIST_URL}/:id/${suffix}`, BROWSE_PAGE, async (request, reply) => {
      const id = idParam(request);
      if (id === undefined) return sendNotFound(request, reply, "There is no such webhook.");
      const f = formFields(request.body);
      let next: string;
      try {
        next = await run(id, f, request);
      } catch (error) {
        // Bad input: the form again, with the service's message; anything else as a GET would say it.
        const badInput = error instanceof Unconfirmed || (error instanceof DomainError && error.kind === "invalid");
        if (!badInput) return refused(request, reply, error);
        return showOne(request, reply.code(400), id, { form: formOf(f), message: error.message });
      }
      return backTo(reply, next);
    });

  action("edit", async (id, f, request) => {
    await webhooks.update(id, inputOf(formOf(f), f.text("secret")), callerOf(request));
    return `${LIST_URL}/${id}`;
  });
  action("test", async (id, _f, request) => {
    const delivery = await webhooks.test(id, callerOf(request));
    return `${LIST_URL}/${id}?tested=${delivery.id}`;
  });
  action("delete", async (id, f, request) => {
    if (!f.checked("confirm")) throw new Unconfirmed("Tick the box to confirm the deletion.");
    await webhooks.delete(id, callerOf(request));
    return LIST_URL;
  });
}
