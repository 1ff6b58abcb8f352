import { randomBytes } from "node:crypto";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { cacheHeaderJson } from "../../domain/cache-header.js";
import { DomainError, invalid, notFound } from "../../domain/errors.js";
import {
  formatPackageStoreXml,
  STORAGE_TYPES,
  type StorageConfig,
  type StorageType,
} from "../../domain/package-store.js";
import type { FeedScope } from "../../domain/principal.js";
import { printable } from "../../domain/upack-manifest.js";
import {
  checkFeedGroup,
  checkStoreAuthority,
  type ConnectorReference,
  credentialsNotLent,
  type FeedCaller,
  refuseNewlyAttached,
} from "./feed-caller.js";
import { connectorNotFound } from "./feed-connectors.js";
import { mergeFeedInput, storageFromInput } from "./feed-merge.js";
import { refuseUnsafeStoreEndpoint } from "./storage-endpoint.js";
import type { Feed, FeedDraft } from "./feed-settings.js";
import type { FeedRepository } from "./repository.js";
import type { SecretBox } from "../../storage/secrets.js";
import { hideStorageSecrets, openStorageSecrets, sealGivenSecrets } from "../../storage/storage-secrets.js";
import type { FeedInput, FeedJson } from "./schemas.js";

/** How a feed is shown to one caller: the public URL of the server and what the caller may do. */
export interface FeedView {
  /** Overrides nothing when config.baseUrl is set (the operator's word wins over request headers). */
  readonly requestBaseUrl?: string;
  /** Whether the caller may add packages to this feed (docs/compat.md 5.2 `canPublish`). */
  readonly canPublish: boolean;
}

/** Feed management use cases (docs/seed-api.md area I). Throws DomainError; knows no HTTP. */
export interface FeedService {
  /** Id, canonical name and feed group of the feed with this name or alternate name, case-insensitively. */
  findScope(name: string): Promise<FeedScope | undefined>;
  /** The feed with this name or alternate name, case-insensitively (for other areas: id, storageKey, type). */
  findFeed(name: string): Promise<Feed | undefined>;
  /** Like findFeed; throws not_found. */
  getFeed(name: string): Promise<Feed>;
  listFeeds(): Promise<Feed[]>;
  /**
   * Validates (400), checks referenced connectors (422; 403 for one with stored credentials that
   * the caller may not use) and names (409), then stores.
   */
  createFeed(input: FeedInput, caller?: FeedCaller): Promise<Feed>;
  /**
   * Partial update of the feed named `name` (docs/compat.md 5.1), checked as createFeed; a different
   * `input.name` renames it, and its keys and permissions follow (they are bound to its id).
   */
  updateFeed(name: string, input: FeedInput, caller?: FeedCaller): Promise<Feed>;
  /** Deletes the feed, and with it the API keys and permissions scoped to it (migration 0010). */
  deleteFeed(name: string): Promise<void>;
  storageTypes(): readonly StorageType[];
  /** FeedStorageConfiguration of a feed; the default is disk with no StoragePath. */
  getStorage(name: string): Promise<StorageConfig>;
  setStorage(name: string, input: unknown, caller?: FeedCaller): Promise<StorageConfig>;
  /** The Feed JSON of docs/compat.md 5.2 for one caller. */
  present(feed: Feed, view: FeedView): FeedJson;
}

export interface FeedServiceDeps {
  readonly repository: FeedRepository;
  readonly clock: Clock;
  readonly config: Config;
  /** The connector with this name, case-insensitively; without it (tests) no connector exists. */
  readonly findConnector?: (name: string) => Promise<ConnectorReference | undefined>;
  /** Whether a vulnerability source exists; Wharf has none yet. */
  readonly vulnerabilitySourceExists?: (name: string) => Promise<boolean>;
  /** Seals storage credentials (storage-secrets.ts); without it S3 and Azure storage are refused. */
  readonly secrets?: SecretBox;
}

const DISK_STORAGE: StorageConfig = { id: "disk", properties: { StoragePath: null } };

/** The feed with its storage setting replaced (undefined: the server default). */
function storageDraft(feed: Feed, storage: StorageConfig | undefined): Feed {
  const settings = { ...feed.settings };
  if (storage === undefined) delete settings.storage;
  else settings.storage = storage;
  return { ...feed, settings };
}

export function createFeedServiceWith(deps: FeedServiceDeps): FeedService {
  const { repository, clock, config } = deps;
  const findConnector = deps.findConnector ?? (async () => undefined);
  const vulnerabilitySourceExists = deps.vulnerabilitySourceExists ?? (async () => false);
  const now = () => clock.now().toISOString();
  /** What a feed with no storage setting uses: the server default, as answers show it. */
  const defaultStorage = config.defaultStorage ? hideStorageSecrets(config.defaultStorage) : DISK_STORAGE;

  /** A stored storage setting with its secrets open, to compare locations (undefined when unreadable). */
  function opened(storage: StorageConfig | undefined): StorageConfig | undefined {
    if (storage === undefined || storage.id === "disk" || deps.secrets === undefined) return storage;
    try {
      return openStorageSecrets(storage, deps.secrets);
    } catch {
      return undefined;
    }
  }

  /**
   * The draft with its storage credentials sealed: a new secret sealed, HIDDEN_SECRET replaced by
   * the one stored (storage-secrets.ts). Unchanged settings keep their sealed values as they are.
   */
  function withSealedStorage<T extends FeedDraft>(draft: T, current: StorageConfig | undefined): T {
    const storage = draft.settings.storage;
    if (storage === undefined || storage === current || storage.id === "disk") return draft;
    if (deps.secrets === undefined) {
      throw invalid("UNSUPPORTED_SETTING", `${storage.id} storage cannot be set here: use the server's API`);
    }
    refuseUnsafeStoreEndpoint(storage);
    const sealed = sealGivenSecrets(storage, current, deps.secrets);
    return { ...draft, settings: { ...draft.settings, storage: sealed } };
  }

  async function getFeed(name: string): Promise<Feed> {
    const feed = await repository.findByName(name);
    if (!feed) throw notFound("FEED_NOT_FOUND", `The feed '${printable(name)}' was not found.`);
    return feed;
  }

  /**
   * References to other entities are checked after the input itself is valid (422, old
   * feed-management doc). Returns the lowercased names of the draft's connectors that carry
   * stored credentials which the caller may not use: they must not be newly attached.
   */
  async function checkReferences(input: FeedInput, draft: FeedDraft, caller?: FeedCaller) {
    const credentialed = new Set<string>();
    if (input.connectors) {
      for (const name of draft.settings.connectors) {
        const connector = await findConnector(name);
        if (!connector) throw connectorNotFound(name);
        if (connector.hasCredentials) credentialed.add(name.toLowerCase());
      }
    }
    if (input.vulnerabilitySources) {
      for (const source of draft.settings.vulnerabilitySources) {
        if (!(await vulnerabilitySourceExists(source))) {
          throw new DomainError(
            "unprocessable",
            "VULNERABILITY_SOURCE_NOT_FOUND",
            `vulnerability source '${source}' does not exist`,
          );
        }
      }
    }
    return credentialsNotLent(credentialed, caller);
  }

  return {
    findScope: (name) => repository.findScope(name),
    findFeed: (name) => repository.findByName(name),
    getFeed,
    listFeeds: () => repository.list(),

    async createFeed(input, caller) {
      const draft = withSealedStorage(mergeFeedInput(undefined, input), undefined);
      await checkFeedGroup(undefined, draft, caller);
      await checkStoreAuthority(undefined, opened(draft.settings.storage), caller);
      refuseNewlyAttached([], draft, await checkReferences(input, draft, caller));
      return repository.insert(draft, randomBytes(16).toString("hex"), now());
    },

    async updateFeed(name, input, caller) {
      const current = await getFeed(name);
      // Validate against what we read (so a bad request fails before any reference lookup), then
      // merge again inside the transaction against the row as it is then.
      const draft = withSealedStorage(mergeFeedInput(current, input), current.settings.storage);
      await checkFeedGroup(current, draft, caller);
      await checkStoreAuthority(opened(current.settings.storage), opened(draft.settings.storage), caller);
      const forbiddenConnectors = await checkReferences(input, draft, caller);
      refuseNewlyAttached(current.settings.connectors, draft, forbiddenConnectors);
      return repository.update(
        current.id,
        (fresh) => {
          const next = withSealedStorage(mergeFeedInput(fresh, input), fresh.settings.storage);
          refuseNewlyAttached(fresh.settings.connectors, next, forbiddenConnectors);
          return next;
        },
        now(),
      );
    },

    async deleteFeed(name) {
      if (!(await repository.deleteByName(name))) {
        throw notFound("FEED_NOT_FOUND", `The feed '${printable(name)}' was not found.`);
      }
    },

    storageTypes: () => STORAGE_TYPES,

    async getStorage(name) {
      const { storage } = (await getFeed(name)).settings;
      return storage === undefined ? defaultStorage : hideStorageSecrets(storage);
    },

    async setStorage(name, input, caller) {
      const current = await getFeed(name);
      const draft = withSealedStorage(
        storageDraft(current, storageFromInput(input, current.settings.storage)),
        current.settings.storage,
      );
      await checkStoreAuthority(opened(current.settings.storage), opened(draft.settings.storage), caller);
      const updated = await repository.update(
        current.id,
        (fresh) => {
          const storage = storageFromInput(input, fresh.settings.storage);
          return withSealedStorage(storageDraft(fresh, storage), fresh.settings.storage);
        },
        now(),
      );
      const { storage } = updated.settings;
      return storage === undefined ? defaultStorage : hideStorageSecrets(storage);
    },

    present(feed, view) {
      const base = config.baseUrl ?? view.requestBaseUrl ?? `http://localhost:${config.port}`;
      return presentFeed(feed, base, view.canPublish);
    },
  };
}

/** Where clients reach the feed (docs/compat.md 5.2 `endpointUrl`): universal and romp feeds are served under /upack. */
export function endpointUrl(feed: Feed, baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, "");
  const name = encodeURIComponent(feed.name);
  if (feed.feedType === "universal" || feed.feedType === "romp") return `${base}/upack/${name}`;
  if (feed.feedType === "asset") return `${base}/endpoints/${name}`;
  return `${base}/${feed.feedType}/${name}`;
}

function presentFeed(feed: Feed, baseUrl: string, canPublish: boolean): FeedJson {
  const s = feed.settings;
  const optional = <K extends string, V>(key: K, value: V | undefined) =>
    (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;
  return {
    name: feed.name,
    alternateNames: [...feed.alternateNames],
    feedType: feed.feedType,
    ...optional("feedGroup", feed.feedGroup),
    ...optional("description", s.description),
    active: s.active,
    cacheConnectors: s.cacheConnectors,
    ...optional("dropPath", s.dropPath),
    ...optional("packagesPath", s.packagesPath),
    ...optional("packageStore", s.storage && formatPackageStoreXml(hideStorageSecrets(s.storage))),
    ...optional("allowUnknownLicenses", s.allowUnknownLicenses),
    allowedLicenses: [...s.allowedLicenses],
    blockedLicenses: [...s.blockedLicenses],
    symbolServerEnabled: s.symbolServerEnabled,
    stripSymbols: s.stripSymbols,
    stripSource: s.stripSource,
    stripSignature: s.stripSignature,
    useApiV3: s.useApiV3,
    endpointUrl: endpointUrl(feed, baseUrl),
    connectors: [...s.connectors],
    vulnerabilitySources: [...s.vulnerabilitySources],
    retentionRules: s.retentionRules.map((rule) => ({ ...rule })),
    packageFilters: { ...s.packageFilters },
    packageAccessRules: { ...s.packageAccessRules },
    variables: { ...s.variables },
    variableDictionary: { ...s.variables },
    canPublish: canPublish && s.active,
    packageStatisticsEnabled: s.packageStatisticsEnabled,
    restrictPackageStatistics: s.restrictPackageStatistics,
    deploymentRecordsEnabled: s.deploymentRecordsEnabled,
    usageRecordsEnabled: s.usageRecordsEnabled,
    vulnerabilitiesEnabled: s.vulnerabilitiesEnabled,
    licensesEnabled: s.licensesEnabled,
    useWithProjects: s.useWithProjects,
    retentionRulesEnabled: s.retentionRulesEnabled,
    ...optional("retentionSchedule", s.retentionSchedule),
    staticSite: s.staticSite,
    ...optional("cacheHeader", s.cacheHeader && cacheHeaderJson(s.cacheHeader)),
  };
}
