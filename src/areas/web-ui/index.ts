import type { FastifyInstance, FastifyReply } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import type { Authenticator } from "../../http/auth.js";
import type { JobRunner } from "../../jobs/runner.js";
import type { DiskSpace } from "../../storage/disk-space.js";
import type { MetadataDb } from "../../storage/metadata-db.js";
import type { FeedStoreMoves } from "../../storage/feed-store-move.js";
import type { EveryStoreCollector } from "../../storage/stores-collector.js";
import type { ConfigurationRuntime, ConfigurationServices } from "../configuration/index.js";
import type { ConnectorService } from "../connectors/index.js";
import type { ContentAreaDeps } from "../content-area-deps.js";
import type { EndpointsServices } from "../endpoints/index.js";
import type { FeedService } from "../management/service.js";
import type { NativeRegistry } from "../native/registry.js";
import type { PackageDeploymentService } from "../package-deployment/index.js";
import type { ReleasesServices } from "../releases/index.js";
import type { SecurityServices } from "../security/index.js";
import type { AuditLog } from "../audit/index.js";
import type { UpackServices } from "../upack/index.js";
import { SCRIPT } from "./assets/script.js";
import { STYLE } from "./assets/style.js";
import { registerErrorPages } from "./error-pages.js";
import { registerUiSecurity } from "./session/ui-security.js";
import type { UiSessions } from "./session/ui-sessions.js";
import { signInRoutes } from "./sign-in-routes.js";
import { registerAdminPages } from "./admin/index.js";
import { registerAuditPages } from "./audit/index.js";
import { registerAssetDirectoryPages } from "./asset-dirs/index.js";
import { registerConfigurationPages } from "./configuration/index.js";
import { registerDeliveryPages } from "./delivery/index.js";
import { registerBrowsePages } from "./pages/index.js";
import { registerReferencePages } from "./reference/index.js";
import { registerWebhookPages } from "./webhooks/index.js";
import { registerRetentionPages } from "./retention/index.js";
import type { WebhookService } from "../webhooks/index.js";
import type { PromotionService } from "../promotions/index.js";
import type { RetentionService } from "../retention/index.js";
import { ASSET_VERSION } from "./views.js";
import type { ClusterView } from "../health/cluster-routes.js";

/** What the pages read through: the same services as the APIs (no second copy of any rule). */
export interface WebUiDeps {
  /** The data directory's SQLite or a cluster's PostgreSQL: pages build their readers for it. */
  readonly db: MetadataDb;
  readonly config: Config;
  readonly clock: Clock;
  /** The one authentication path: sign-in checks a password through it (throttled like the APIs). */
  readonly authenticator: Authenticator;
  readonly feeds: FeedService;
  readonly upack: UpackServices;
  /** Asset directories' services (the endpoints area's). */
  readonly endpoints: EndpointsServices;
  /** What the content areas are built from (blob reader, keepers): the asset routes mounted under /ui need it. */
  readonly content: ContentAreaDeps;
  /** Deployment records of packages (package-deployment area). */
  readonly deployments: PackageDeploymentService;
  readonly connectors: ConnectorService;
  /** Moves of feeds between package stores, and garbage collection (the storage API's). */
  readonly moves: FeedStoreMoves;
  readonly collector: EveryStoreCollector;
  /** The security API's services: users, groups, permissions, API keys. */
  readonly security: SecurityServices;
  readonly releases: ReleasesServices;
  readonly configuration: ConfigurationServices;
  readonly configurationRuntime: ConfigurationRuntime;
  /** The one job runner: remediation jobs' logs (configuration pages). */
  readonly jobs: Pick<JobRunner, "readLog">;
  /** The native API's methods, for the reference pages. */
  readonly nativeRegistry: NativeRegistry;
  /** Free space where the data directory is (server health). */
  readonly disk: DiskSpace;
  /** The nodes serving this database, as /api/cluster/nodes lists them (one machine: this one). */
  readonly cluster: () => Promise<ClusterView>;
  /** Signed-in browsers' sessions: the rows, and what the authentication hook asks (http/auth.ts). */
  readonly sessions: UiSessions;
  /** The audit log (areas/audit/): its page reads what /api/audit reads. */
  readonly audit: AuditLog;
  /** The webhooks API's service (its pages: admin/webhooks). */
  readonly webhooks: WebhookService;
  /** Retention previews and runs (areas/retention/): the feed's retention page. */
  readonly retention: RetentionService;
  /** Promotion and repackaging (areas/promotions/): the package page's forms and provenance. */
  readonly promotions: PromotionService;
}

/**
 * The web UI for people (issue 16): server-rendered pages from this process. Each part registers
 * its routes here, marked `config.ui` so that the session cookie authenticates them (and only them:
 * the machine APIs never accept it).
 */
export async function webUiArea(app: FastifyInstance, deps: WebUiDeps) {
  // Pages are for people, not part of the machine API's description (/openapi.json).
  app.addHook("onRoute", (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  // First: cookies, CSRF checks and security headers for every route of this area (and no other).
  await registerUiSecurity(app);
  registerErrorPages(app);
  await signInRoutes(app, deps);
  const immutable = "public, max-age=31536000, immutable";
  const asset = (type: string, body: string) => ({
    config: { access: { public: true as const } },
    handler: async (request: { query: unknown }, reply: FastifyReply) => {
      // A stale version asked for gets the current bytes, but not for a year.
      const current = (request.query as { v?: string }).v === ASSET_VERSION;
      return reply
        .type(type)
        .header("Cache-Control", current ? immutable : "no-cache")
        .send(body);
    },
  });
  app.get("/ui/style.css", asset("text/css; charset=utf-8", STYLE));
  app.get("/ui/app.js", asset("text/javascript; charset=utf-8", SCRIPT));
  app.get("/", { config: { access: { public: true } } }, async (_request, reply) => reply.redirect("/feeds", 303));
  await registerBrowsePages(app, deps);
  await registerAssetDirectoryPages(app, deps);
  await registerDeliveryPages(app, deps);
  await registerConfigurationPages(app, deps);
  await registerAdminPages(app, deps);
  registerAuditPages(app, deps);
  registerWebhookPages(app, deps);
  registerRetentionPages(app, deps);
  await registerReferencePages(app, deps);
}
