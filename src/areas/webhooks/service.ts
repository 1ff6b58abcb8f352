import type { Clock } from "../../domain/clock.js";
import { DomainError, invalid, notFound } from "../../domain/errors.js";
import { type AccessNeed, needOnFeed } from "../../domain/principal.js";
import type { EventType } from "../../lifecycle/events.js";
import type { ResolveHost } from "../../net/fetch-guard.js";
import { parseFetchUrl, resolveWithSystemDns, vetFetchTarget } from "../../net/fetch-target.js";
import type { SecretBox } from "../../storage/secrets.js";
import { type Feed, type FeedService, scopeOf } from "../management/index.js";
import { ADMINISTER } from "../security/model.js";
import { checkHeaders } from "./headers.js";
import {
  type Delivery,
  type DeliveryBody,
  PING_EVENT,
  type Webhook,
  WEBHOOK_EVENTS,
  WEBHOOK_METHODS,
  type WebhookMethod,
} from "./model.js";
import { DELIVERY_CLAIM_MS, type WebhookRepository } from "./repository.js";
import { generateSecret } from "./signature.js";
import { checkUrlTemplate, renderUrl } from "./url-template.js";
import { type DeliveryWorker, SECRET_PURPOSE } from "./worker.js";

/** What a client sends to create or change a webhook (schemas.ts checks the JSON types). */
export interface WebhookInput {
  readonly name?: string | null | undefined;
  /** A feed's name: its events alone; absent or null: a global webhook. Fixed once created. */
  readonly feed?: string | null | undefined;
  readonly events?: readonly string[] | null | undefined;
  readonly url?: string | null | undefined;
  readonly method?: string | null | undefined;
  readonly headers?: Readonly<Record<string, unknown>> | null | undefined;
  /** Write-only. On create, generated when absent; on update, replaces the stored one. */
  readonly secret?: string | null | undefined;
  readonly active?: boolean | null | undefined;
}

/** A webhook as answers show it: never its secret. */
export interface WebhookView {
  readonly id: number;
  readonly name: string;
  readonly feed: string | null;
  readonly events: EventType[];
  readonly url: string;
  readonly method: WebhookMethod;
  readonly headers: Record<string, string>;
  readonly active: boolean;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** Who asks: the request's access checks (request.can / request.authorize) and its actor name. */
export interface WebhookCaller {
  readonly actor: string;
  can(need: AccessNeed): Promise<boolean>;
  /** Throws 401/403 unless the caller meets the need. */
  authorize(need: AccessNeed): Promise<void>;
}

export interface WebhookService {
  /** The webhooks the caller may manage. */
  list(caller: WebhookCaller): Promise<WebhookView[]>;
  get(id: number, caller: WebhookCaller): Promise<WebhookView>;
  /** The new webhook, and its secret: shown this once. */
  create(input: WebhookInput, caller: WebhookCaller): Promise<{ webhook: WebhookView; secret: string }>;
  update(id: number, input: WebhookInput, caller: WebhookCaller): Promise<WebhookView>;
  delete(id: number, caller: WebhookCaller): Promise<void>;
  /** Sends a ping now and answers the delivery as recorded. */
  test(id: number, caller: WebhookCaller): Promise<Delivery>;
  deliveries(id: number, caller: WebhookCaller, page: { limit: number; before?: number }): Promise<Delivery[]>;
  /** Whether the caller may create a webhook for this feed (undefined: a global one), for the UI's forms. */
  canManage(feed: string | undefined, caller: Pick<WebhookCaller, "can">): Promise<boolean>;
}

export interface WebhookServiceDeps {
  readonly repository: WebhookRepository;
  readonly feeds: FeedService;
  readonly secrets: SecretBox;
  readonly clock: Clock;
  readonly worker: DeliveryWorker;
  /** WHARF_FETCH_ALLOW_PRIVATE: the fetch guard's policy, checked at create time too. */
  readonly allowPrivate: boolean;
  readonly resolve?: ResolveHost;
}

const MAX_NAME = 100;
/** DNS at creation is advice, not a gate (as for connectors): every delivery is checked again. */
const RESOLVE_TIMEOUT_MS = 5_000;

export function createWebhookService(deps: WebhookServiceDeps): WebhookService {
  const { repository, feeds, secrets, clock } = deps;
  const policy = { allowPrivate: deps.allowPrivate, allowLoopback: deps.allowPrivate };
  const resolve = deps.resolve ?? resolveWithSystemDns;

  const feedById = async (id: number): Promise<Feed | undefined> =>
    (await feeds.listFeeds()).find((feed) => feed.id === id);

  async function needOf(webhook: Webhook): Promise<AccessNeed> {
    if (webhook.feedId === undefined) return ADMINISTER;
    const feed = await feedById(webhook.feedId);
    // The cascade removes a deleted feed's webhooks; one seen in between needs a global grant.
    return feed === undefined ? needOnFeed("Admin_ManageFeed") : needOnFeed("Admin_ManageFeed", scopeOf(feed));
  }

  /** The webhook, once the caller is known to manage it; unknown ids are 404 to everyone allowed anything. */
  async function managed(id: number, caller: WebhookCaller): Promise<Webhook> {
    const webhook = await repository.find(id);
    if (webhook === undefined) throw notFound("WEBHOOK_NOT_FOUND", `There is no webhook ${id}.`);
    await caller.authorize(await needOf(webhook));
    return webhook;
  }

  async function present(webhook: Webhook, names?: ReadonlyMap<number, string>): Promise<WebhookView> {
    const feedName =
      webhook.feedId === undefined
        ? null
        : (names?.get(webhook.feedId) ?? (await feedById(webhook.feedId))?.name ?? null);
    return {
      id: webhook.id,
      name: webhook.name,
      feed: feedName,
      events: [...webhook.events],
      url: webhook.urlTemplate,
      method: webhook.method,
      headers: { ...webhook.headers },
      active: webhook.active,
      createdBy: webhook.createdBy,
      createdAt: webhook.createdAt,
      updatedAt: webhook.updatedAt,
    };
  }

  async function checkUrl(template: string): Promise<void> {
    checkUrlTemplate(template);
    // The host has no placeholders (checkUrlTemplate), so any rendering names the real one.
    const url = parseFetchUrl(
      renderUrl(template, { feed: "", group: "", name: "", version: "", event: "" }),
      undefined,
      0,
    );
    try {
      await vetFetchTarget(url, 0, policy, resolve, AbortSignal.timeout(RESOLVE_TIMEOUT_MS));
    } catch (error) {
      if (error instanceof DomainError && error.code === "FETCH_ADDRESS_REFUSED") {
        throw new DomainError("invalid", "WEBHOOK_URL_REFUSED", error.message);
      }
      // Not resolvable now: accepted (the receiver may not exist yet); each delivery is vetted.
    }
  }

  /** The stored fields, from the input over the current ones (none on create). */
  async function fieldsOf(input: WebhookInput, current: Webhook | undefined) {
    const name = (input.name ?? current?.name ?? "").trim();
    if (name === "" || name.length > MAX_NAME)
      throw invalid("WEBHOOK_NAME_INVALID", `A webhook needs a name of 1 to ${MAX_NAME} characters.`);
    const url = input.url ?? current?.urlTemplate;
    if (url === undefined) throw invalid("WEBHOOK_URL_INVALID", "A webhook needs a url.");
    if (url !== current?.urlTemplate) await checkUrl(url);
    const method = (input.method ?? current?.method ?? "POST").toUpperCase();
    if (!(WEBHOOK_METHODS as readonly string[]).includes(method))
      throw invalid("WEBHOOK_METHOD_INVALID", `A webhook's method is one of ${WEBHOOK_METHODS.join(", ")}.`);
    return {
      name,
      events: eventsOf(input.events, current?.events),
      urlTemplate: url,
      method: method as WebhookMethod,
      headers: input.headers == null ? (current?.headers ?? {}) : checkHeaders(input.headers),
      active: input.active ?? current?.active ?? true,
    };
  }

  function sealed(secret: string): string {
    if (secret.length < 16 || secret.length > 200 || !/^[\x21-\x7e]+$/.test(secret)) {
      throw invalid(
        "WEBHOOK_SECRET_INVALID",
        "A webhook's secret must be 16 to 200 printable characters without spaces.",
      );
    }
    return secrets.seal(secret, SECRET_PURPOSE);
  }

  return {
    async list(caller) {
      const all = await repository.list();
      const byId = new Map((await feeds.listFeeds()).map((feed) => [feed.id, feed]));
      const names = new Map([...byId].map(([id, feed]) => [id, feed.name]));
      const visible: WebhookView[] = [];
      for (const webhook of all) {
        const feed = webhook.feedId === undefined ? undefined : byId.get(webhook.feedId);
        const need =
          webhook.feedId === undefined
            ? ADMINISTER
            : needOnFeed("Admin_ManageFeed", feed === undefined ? undefined : scopeOf(feed));
        if (await caller.can(need)) visible.push(await present(webhook, names));
      }
      return visible;
    },
    async get(id, caller) {
      return present(await managed(id, caller));
    },
    async create(input, caller) {
      const feedName = input.feed ?? undefined;
      // Asked before the feed is looked up: an unknown feed and a forbidden one look the same.
      await caller.authorize(feedName === undefined ? ADMINISTER : needOnFeed("Admin_ManageFeed", feedName));
      const feed = feedName === undefined ? undefined : await feeds.findFeed(feedName);
      if (feedName !== undefined && feed === undefined)
        throw notFound("FEED_NOT_FOUND", `There is no feed named '${feedName}'.`);
      const secret = input.secret ?? generateSecret();
      const webhook = await repository.insert({
        ...(await fieldsOf(input, undefined)),
        feedId: feed?.id,
        sealedSecret: sealed(secret),
        createdBy: caller.actor,
        at: clock.now(),
      });
      return { webhook: await present(webhook), secret };
    },
    async update(id, input, caller) {
      const current = await managed(id, caller);
      if (input.feed !== undefined) {
        const currentFeed = current.feedId === undefined ? undefined : await feedById(current.feedId);
        const same =
          input.feed === null
            ? current.feedId === undefined
            : currentFeed?.name.toLowerCase() === input.feed.toLowerCase();
        if (!same)
          throw invalid("WEBHOOK_FEED_FIXED", "A webhook's feed cannot be changed: create a new webhook instead.");
      }
      const changed = await repository.update(id, {
        ...(await fieldsOf(input, current)),
        sealedSecret: input.secret == null ? current.sealedSecret : sealed(input.secret),
        at: clock.now(),
      });
      if (changed === undefined) throw notFound("WEBHOOK_NOT_FOUND", `There is no webhook ${id}.`);
      return present(changed);
    },
    async delete(id, caller) {
      await managed(id, caller);
      await repository.delete(id);
    },
    async test(id, caller) {
      const webhook = await managed(id, caller);
      const feed = webhook.feedId === undefined ? undefined : await feedById(webhook.feedId);
      const body: DeliveryBody = {
        event: PING_EVENT,
        eventId: null,
        occurredAt: clock.now().toISOString(),
        feed: feed === undefined ? null : { id: feed.id, name: feed.name },
        package: null,
        actor: caller.actor,
        data: {},
        webhook: { id: webhook.id, name: webhook.name },
      };
      // Claimed by this node as it is made: another node's poll must not send it a second time.
      const now = clock.now();
      const claimedUntil = new Date(now.getTime() + DELIVERY_CLAIM_MS);
      const delivery = await repository.insertDelivery(webhook.id, PING_EVENT, JSON.stringify(body), now, claimedUntil);
      const sent = await deps.worker.sendNow(delivery);
      if (sent === undefined) throw new DomainError("unavailable", "SERVER_CLOSING", "The server is closing.");
      return sent;
    },
    async deliveries(id, caller, page) {
      await managed(id, caller);
      return repository.deliveries(id, page);
    },
    async canManage(feed, caller) {
      return caller.can(feed === undefined ? ADMINISTER : needOnFeed("Admin_ManageFeed", feed));
    },
  };
}

function eventsOf(given: readonly string[] | null | undefined, current: readonly EventType[] | undefined): EventType[] {
  if (given == null) return [...(current ?? WEBHOOK_EVENTS)];
  const unknown = given.filter((event) => !(WEBHOOK_EVENTS as readonly string[]).includes(event));
  if (unknown.length > 0 || given.length === 0) {
    throw invalid(
      "WEBHOOK_EVENTS_INVALID",
      `A webhook's events are one or more of ${WEBHOOK_EVENTS.join(", ")}${unknown.length > 0 ? `; unknown: ${unknown.join(", ")}` : ""}.`,
    );
  }
  return [...new Set(given as EventType[])];
}
