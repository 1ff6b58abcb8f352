import { randomUUID } from "node:crypto";
import formbody from "@fastify/formbody";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { ciBadgesArea } from "./areas/ci-badges/index.js";
import {
  connectorsArea,
  createConnectors,
  createConnectorUpstreams,
  findConnectorReference,
} from "./areas/connectors/index.js";
import { createEndpointsServices, endpointsArea } from "./areas/endpoints/index.js";
import { healthRoutes } from "./areas/health/routes.js";
import { createNativeRegistry, NATIVE_METHODS, nativeArea } from "./areas/native/index.js";
import { packagesApiArea } from "./areas/upack/packages-api/index.js";
import { createPromotionServices, promotionsArea } from "./areas/promotions/index.js";
import { createFeedService, managementArea } from "./areas/management/index.js";
import { createPackageDeploymentService, packageDeploymentArea } from "./areas/package-deployment/index.js";
import { createReleasesServices, packageOpener, releasesArea } from "./areas/releases/index.js";
import { createRetention, retentionArea } from "./areas/retention/index.js";
import {
  configurationArea,
  createConfigurationRuntime,
  createConfigurationServices,
  createFeedPackageSource,
} from "./areas/configuration/index.js";
import { auditArea, createAuditLog, registerAuditRecording } from "./areas/audit/index.js";
import { createAuthRepositoryOf } from "./areas/security/repository.js";
import { createThrottledAuthenticator } from "./areas/security/attempt-throttle.js";
import { createAuthMetrics } from "./areas/security/auth-metrics.js";
import { createSecurityServices, securityArea } from "./areas/security/index.js";
import { webUiArea } from "./areas/web-ui/index.js";
import { webhooksArea } from "./areas/webhooks/index.js";
import { createUiSessions } from "./areas/web-ui/session/ui-sessions.js";
import { createUpackServices, upackArea } from "./areas/upack/index.js";
import type { Config } from "./config.js";
import { type Clock, systemClock } from "./domain/clock.js";
import { registerAuthentication } from "./http/auth.js";
import { registerBodyParsers } from "./http/body-parsers.js";
import { registerCompression } from "./http/compression.js";
import { registerDiskGuard } from "./http/disk-guard.js";
import { diskMetrics } from "./http/disk-metrics.js";
import { answerClientError, registerErrorHandling, sendError } from "./http/errors.js";
import { loggerOptions } from "./http/logging.js";
import { registerMetrics } from "./http/metrics.js";
import { createHotResponses, type HotResponses } from "./http/hot-responses.js";
import { registerOpenApi, registerOpenApiRoutes } from "./http/openapi.js";
import { registerPreAuthBodyLimits } from "./http/pre-auth-body.js";
import { serverGuardsFor, serverWithFirstResponder } from "./http/server-factory.js";
import { createJobRunner, type JobRunner } from "./jobs/runner.js";
import { uploadArchiveLimits } from "./storage/archives.js";
import { blobReferenceCheck } from "./storage/blob-keeper.js";
import { createBlobStores } from "./storage/blob-stores.js";
import type { createObjectStore } from "./storage/store-factory.js";
import { createEveryStoreCollector } from "./storage/stores-collector.js";
import { createFeedStoreMoves, type FeedStoreMoveHooks } from "./storage/feed-store-move.js";
import { resealStorageCredentials, type StorageResealResult } from "./storage/storage-reseal.js";
import { resealPostgresStorageCredentials } from "./storage/storage-reseal-postgres.js";
import { byDatabase, cacheVersionOf, isPostgres, type MetadataDb } from "./storage/metadata-db.js";
import type { PostgresChangeWatch } from "./storage/postgres/change-feed.js";
import { defaultNodeId } from "./storage/postgres/cluster-nodes.js";
import { postgresBlobReferenceCheck } from "./storage/blob-keeper-postgres.js";
import { createPostgresJobRunner } from "./jobs/runner-postgres.js";
import { createLedSingletons, createLocalSingletons } from "./jobs/singletons.js";
import { clusterRoutes, clusterView } from "./areas/health/cluster-routes.js";
import { NODE_HEARTBEAT_MS } from "./storage/postgres/cluster-nodes.js";
import { storageGcRoutes } from "./areas/management/gc-routes.js";
import { GC_GRACE_MS, scheduleGarbageCollection } from "./storage/garbage-collector.js";
import type { BlobStore } from "./storage/blob-store.js";
import { neverBlockOnLocks } from "./storage/busy.js";
import { DATA_DIR_NAMES, dataPaths } from "./storage/data-paths.js";
import { loadSecretKeys } from "./storage/secret-keys.js";
import { createDiskSpace } from "./storage/disk-space.js";
import { PROGET_API_VERSION, PROGET_EDITION } from "./version.js";

/** An address no content hashes to in practice: what /health asks the package stores for. */
const NO_BLOB = "0".repeat(64);

export interface AppDeps {
  /**
   * The data directory's SQLite (switched to never block the event loop on another process's
   * lock: storage/busy.ts), or in cluster mode the node's PostgreSQL (cluster-node.ts).
   */
  readonly db: MetadataDb;
  /** This node of a cluster: its id, change feed and database URL (for its leaderships). Absent: one machine. */
  readonly node?: {
    readonly id: string;
    readonly changeFeed: PostgresChangeWatch;
    readonly databaseUrl: string;
  };
  /** The data directory's package store; feeds may name others (storage/blob-stores.ts). */
  readonly blobs: BlobStore;
  /** Builds the S3 and Azure stores feeds name (tests wrap it to fail on cue); store-factory.ts by default. */
  readonly createObjectStore?: typeof createObjectStore;
  /** Test seams of the mover of feeds between stores (storage/feed-store-move.ts). */
  readonly feedStoreMoveHooks?: FeedStoreMoveHooks;
  readonly clock?: Clock;
  /** false records no audit entries: bench/lifecycle-upload.ts measures what recording costs. */
  readonly audit?: false;
  /** Overrides the pino options built from the config (tests pass `false`). */
  readonly logger?: FastifyServerOptions["logger"];
}

/**
 * Builds the whole Wharf HTTP application: one plugin per area, sharing one database, one blob
 * store and one authentication hook. Never listens: main.ts does, tests use inject().
 */
export async function buildApp(config: Config, deps: AppDeps): Promise<FastifyInstance> {
  const clock = deps.clock ?? systemClock;
  // Before anything else: a key file that is missing or not private stops the start (ConfigError).
  const secrets = loadSecretKeys(config);
  if (!isPostgres(deps.db)) neverBlockOnLocks(deps.db, config.databaseBusyWaitMs);
  const nodeId = deps.node?.id ?? defaultNodeId();
  const startedAt = clock.now();
  // Replays of kept responses: set once the services they check with exist (below); until then
  // every request goes to Fastify.
  const hot: { replays?: HotResponses } = {};
  const guards = serverGuardsFor(config);
  const app: FastifyInstance = Fastify({
    logger: deps.logger ?? loggerOptions(config.logLevel),
    genReqId: () => randomUUID(),
    // request.ip: the peer, unless it is a proxy the operator named (failed sign-ins count per address).
    trustProxy: config.trustProxy === undefined ? false : [...config.trustProxy],
    bodyLimit: 1024 * 1024, // JSON and form bodies; uploads are streamed by their areas with their own limits
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048 },
    forceCloseConnections: "idle",
    // Router errors (malformed percent-encoding, over-long parameters) bypass the error handler.
    frameworkErrors: (error, _request, reply) => sendError(reply, error.statusCode ?? 400, error.code, error.message),
    clientErrorHandler: answerClientError,
    serverFactory: serverWithFirstResponder(
      (request, response) => hot.replays?.replay(request, response) ?? false,
      (error) => app.log.error({ err: error }, "replaying a kept response failed"),
      guards,
    ),
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // Schedulers and other work of which one copy runs per database: on the leading node of a cluster.
  const singletons =
    deps.node === undefined
      ? createLocalSingletons(app.log)
      : createLedSingletons({ url: deps.node.databaseUrl, nodeId, log: app.log });

  // Caches keyed on the database's change version (auth, download lookups) see every commit made before this request.
  const changes = cacheVersionOf(deps.db);
  // Synchronous (callback) hook: no promise and no extra microtask on every request.
  app.addHook("onRequest", (request, reply, done) => {
    changes.refresh();
    reply.header("X-ProGet-Version", PROGET_API_VERSION);
    reply.header("X-ProGet-Edition", PROGET_EDITION);
    reply.header("X-Request-Id", request.id);
    done();
  });
  registerErrorHandling(app);
  registerBodyParsers(app);
  // Before any route: it hooks every route as it is added.
  await registerCompression(app, config.compression);
  await app.register(formbody);
  await registerOpenApi(app);

  // Storage credentials sealed under a previous secret key are sealed again under the current one.
  try {
    const { resealed, unreadable } = await byDatabase<StorageResealResult | Promise<StorageResealResult>>(
      deps.db,
      (db) => resealStorageCredentials(db, secrets.box),
      (db) => resealPostgresStorageCredentials(db, secrets.box),
    );
    if (resealed > 0) app.log.info({ resealed }, "storage credentials encrypted with the current secret key");
    for (const what of unreadable) app.log.warn(`the storage credentials of ${what} cannot be decrypted`);
  } catch (error) {
    app.log.warn({ err: error }, "storage credentials were not re-encrypted; they will be at the next start");
  }
  // Every package store: the data directory's, the server default and those feeds name.
  const stores = await createBlobStores({
    db: deps.db,
    disk: deps.blobs,
    secrets: secrets.box,
    tempDir: dataPaths(config.dataDir).tmp,
    clock,
    ...(config.defaultStorage ? { defaultStorage: config.defaultStorage } : {}),
    ...(config.outboundProxy ? { outboundProxy: config.outboundProxy } : {}),
    ...(deps.createObjectStore ? { createStore: deps.createObjectStore } : {}),
    onUnreadable: (key) => app.log.warn({ store: key }, "a package store's credentials cannot be decrypted"),
    nodeId,
    onHoldError: (error) => app.log.warn({ err: error }, "a blob hold could not be dropped; it lapses on its own"),
  });
  const feeds = createFeedService({
    db: deps.db,
    clock,
    config,
    findConnector: findConnectorReference(deps.db),
    secrets: secrets.box,
  });
  const authMetrics = createAuthMetrics();
  const authenticator = createThrottledAuthenticator(config, authMetrics, {
    repository: createAuthRepositoryOf(deps.db),
    clock,
    resolveFeed: (name) => feeds.findScope(name),
  });
  // The web UI's signed-in browsers: their cookie is read for UI routes alone (http/auth.ts).
  const uiSessions = createUiSessions({ db: deps.db, clock, config });
  registerAuthentication(app, authenticator, uiSessions);
  // The audit log (issue 17): every change and refused authorisation, recorded by one root hook.
  const audit = createAuditLog({
    db: deps.db,
    clock,
    retentionDays: config.auditRetentionDays,
    onWriteError: (error, queued) => app.log.warn({ err: error, queued }, "audit records wait to be written"),
  });
  if (deps.audit !== false) registerAuditRecording(app, audit, clock);
  let stopAuditPruning = () => {};
  singletons.add({
    name: "audit pruning",
    start: () => {
      stopAuditPruning = audit.schedulePruning((error) => app.log.warn({ err: error }, "audit pruning failed"));
    },
    stop: () => stopAuditPruning(),
  });
  app.addHook("onClose", async () => {
    audit.close();
    // On PostgreSQL the last batch is a round trip: written before main.ts ends the pool.
    await audit.flush();
  });
  const preAuthMetrics = registerPreAuthBodyLimits(app, { ...config.preAuthBody, connections: guards.connections });
  // Watched for uploads (refused while space is low), /health and /metrics.
  const disk = createDiskSpace({
    dataDir: config.dataDir,
    db: deps.db,
    minimumFreeBytes: config.minFreeDiskBytes,
    onReserveError: (error) => app.log.warn({ err: error }, "the database's space reserve could not be made"),
  });
  registerDiskGuard(app, disk);
  // Measured once before serving, which makes the space reserve: deletions must work even if the
  // disk fills before anyone asks.
  app.addHook("onReady", async () => {
    await disk.status();
  });
  const metrics = registerMetrics(app, stores.reader, [
    ...authMetrics.all,
    ...diskMetrics(disk),
    ...guards.connections.metrics,
    ...preAuthMetrics,
  ]);
  // Hot small downloads are replayed before Fastify sees them, checked and counted as above.
  const replays = createHotResponses({ watch: changes, authenticator, metrics, log: app.log });
  hot.replays = replays;
  app.addHook("preClose", (done) => {
    replays.stop();
    done();
  });

  await app.register(healthRoutes, {
    db: deps.db,
    disk,
    node: { id: nodeId, ...(deps.node ? { changeFeedListening: () => deps.node?.changeFeed.listening ?? false } : {}) },
    // A blob nobody has: every store is asked, and one that fails makes the answer fail.
    probeStores: async () => void (await stores.reader.stat(NO_BLOB)),
  });
  const clusterDeps = { db: deps.db, nodeId, startedAt, heartbeatMs: NODE_HEARTBEAT_MS };
  await app.register(clusterRoutes, clusterDeps);
  // One set of security services: the security API's routes and the web UI's pages (API keys).
  const security = createSecurityServices({ db: deps.db, clock, feeds });
  await app.register(securityArea, { services: security });
  await app.register(auditArea, { audit });
  // Moves of feeds' blobs to their new store: resumed once the app is ready (below), stopped
  // (between two blobs, the row keeping their place) before it closes.
  const moves = createFeedStoreMoves({
    db: deps.db,
    stores,
    clock,
    nodeId,
    log: app.log,
    ...(deps.feedStoreMoveHooks ? { hooks: deps.feedStoreMoveHooks } : {}),
  });
  app.addHook("preClose", (done) => {
    moves.stop().then(() => done(), done);
  });
  await app.register(managementArea, { feeds, moves });
  // One connector service: its area manages connectors, the universal feed asks their upstreams
  // (with one circuit breaker per upstream, for both APIs).
  if (secrets.source === "generated") {
    app.log.info(
      { keyId: secrets.keyId },
      `generated ${DATA_DIR_NAMES.secretKey} in the data directory: back it up with it`,
    );
  }
  const connectorDeps = { db: deps.db, clock, config, feeds, secrets: secrets.box };
  const connectors = createConnectors(connectorDeps);
  await app.register(connectorsArea, {
    ...connectorDeps,
    connectors,
    takeHealthScheduler: (scheduler) =>
      singletons.add({ name: "connector health", start: () => scheduler.start(), stop: () => scheduler.stop() }),
  });
  const upstreams = createConnectorUpstreams({ db: deps.db, clock, config, connectors });
  // Areas read any blob from whichever store holds it, and write through the keeper of their
  // feed's store (one keeper per store: uploads of the same bytes share one blob).
  const shared = { db: deps.db, blobs: stores.reader, keepers: stores, clock, config, feeds };
  // Blob garbage collection of every store: through its keeper, so that it never deletes what an upload holds.
  const collector = createEveryStoreCollector({
    stores: () => stores.allRecorded(),
    isReferenced: byDatabase(deps.db, blobReferenceCheck, postgresBlobReferenceCheck),
    clock,
    graceMs: GC_GRACE_MS,
    onDeleted: () => metrics.forgetBlobStoreBytes(),
  });
  await app.register(storageGcRoutes, { collector });
  const scheduleGc = () =>
    scheduleGarbageCollection(collector, config.gcIntervalMs, {
      onResult: (result) => {
        const { examined, deleted, bytesFreed } = result;
        if (deleted > 0)
          app.log.info({ examined, deleted, bytesFreed }, "garbage collection deleted unreferenced blobs");
        // A store that could not be collected (down, or its credentials refused) is said at each run.
        for (const { store, error } of result.stores) {
          if (error !== undefined) app.log.warn({ store }, `garbage collection skipped a package store: ${error}`);
        }
      },
      onError: (error) => app.log.warn({ err: error }, "garbage collection failed"),
    });
  let stopGc = () => {};
  singletons.add({ name: "garbage collection", start: () => void (stopGc = scheduleGc()), stop: () => stopGc() });
  // Unfinished feed moves resume in the background: a store that is down must not delay the start.
  // (The object stores' local spools are under tmp/, emptied before the app exists: main.ts.) A move
  // runs on one node: in a cluster each node resumes its own as it starts, and the leader, every
  // heartbeat, those whose node stopped (docs/cluster-mode.md); on one machine the process all of them.
  if (deps.node !== undefined) {
    app.addHook("onReady", async () => {
      // Not awaited: the start waits for no store.
      moves
        .resumeUnfinished()
        .catch((error: unknown) => app.log.warn({ err: error }, "resuming feed store moves failed"));
    });
  }
  let stopResumingMoves = () => {};
  singletons.add({
    name: "feed store moves",
    start: () => void (stopResumingMoves = moves.resumeOrphaned(deps.node === undefined ? 0 : NODE_HEARTBEAT_MS)),
    stop: () => stopResumingMoves(),
  });
  const endpoints = createEndpointsServices(shared);
  const deployments = createPackageDeploymentService({ db: deps.db, clock, feeds });
  // One set of universal feed services for both APIs that serve universal packages. It imports
  // from asset directories (docs/compat.md 2.9) and records deployments announced by downloads.
  const upack = { ...shared, assets: endpoints.assets, deployments, upstreams, hot: replays };
  const upackServices = createUpackServices(upack);
  await app.register(upackArea, { ...upack, services: upackServices });
  await app.register(packagesApiArea, { ...upack, services: upackServices });
  // Promotion and repackaging save through the same universal feed services (issue 17 section 2).
  const promotions = createPromotionServices({
    db: deps.db,
    clock,
    feeds,
    upack: upackServices,
    blobs: stores.reader,
    limits: uploadArchiveLimits(config),
  });
  await app.register(promotionsArea, { promotions });
  await app.register(endpointsArea, { ...shared, ...endpoints });
  await app.register(packageDeploymentArea, { deployments });
  // The one persistent job runner of the database (its restart rule takes every executing job for
  // an orphan): each area adds its job kinds before it starts, deployments and remediations.
  const jobOptions = {
    clock,
    concurrency: Math.max(1, config.deployConcurrency + config.configCheckConcurrency),
    log: app.log,
    stopTimeoutMs: config.deployStopTimeoutMs,
    // Remediations the CLI (or another node) enqueues on the same database are taken within a second.
    pollMs: 1_000,
  };
  // In a cluster each job is claimed by one node under a lease (docs/cluster-mode.md, Background work).
  const jobs = byDatabase<JobRunner>(
    deps.db,
    (db) => createJobRunner({ ...jobOptions, db }),
    (db) => createPostgresJobRunner({ ...jobOptions, db, nodeId, leaseMs: config.jobLeaseMs }),
  );
  app.addHook("onReady", () => jobs.start());
  app.addHook("onClose", () => jobs.stop());
  // Retention (issue 17): runs on the job runner, deleting through the universal feed's delete
  // or the asset directory's; feeds' schedules looked at every WHARF_RETENTION_CHECK_SECONDS.
  const retention = createRetention({
    db: deps.db,
    clock,
    feeds,
    write: upackServices.write,
    assets: endpoints.assets,
    jobs,
    checkIntervalMs: config.retentionCheckMs,
    log: app.log,
  });
  await app.register(retentionArea, { service: retention.service });
  singletons.add({
    name: "retention",
    start: () => retention.scheduler.start(),
    stop: () => retention.scheduler.stop(),
  });
  // One releases service: its API, the CI badges that read builds, and the runner of deployments
  // (deploy-package steps read the universal feeds' stored packages).
  const releases = createReleasesServices({
    db: deps.db,
    clock,
    runner: { config, log: app.log, fetchPackage: packageOpener(upackServices), jobs },
  });
  await app.register(releasesArea, { services: releases });
  // In a cluster, what other nodes commit is heard on the change feed (agents' work, webhook events).
  const changeFeed = deps.node?.changeFeed;
  const otherNodesHeard = changeFeed
    ? { onChange: (listener: (table: string) => void) => changeFeed.onChange(listener) }
    : {};
  // Configuration management (area B): servers, roles, variables, checks and remediation.
  const configurationDeps = {
    db: deps.db,
    clock,
    config,
    secrets: secrets.box,
    // In a cluster, agents' work is routed between nodes through the change feed.
    ...otherNodesHeard,
    nodeId,
  };
  const configuration = createConfigurationServices(configurationDeps);
  // Checks and remediation jobs (on the one job runner); package items read the universal feeds.
  const configurationPackages = createFeedPackageSource(upackServices);
  const configurationRuntime = createConfigurationRuntime({
    db: deps.db,
    clock,
    config,
    infrastructure: configuration.infrastructure,
    jobs,
    packages: configurationPackages,
    agentTransport: configuration.agents.transport,
    deployments,
    credentials: configuration.credentialsStore,
    log: app.log,
    nodeId,
  });
  await app.register(configurationArea, {
    ...configurationDeps,
    services: configuration,
    runtime: configurationRuntime,
    agentPackages: configurationPackages,
    takeScheduling: (work) =>
      singletons.add({ name: "configuration checks", start: () => work.start(), stop: () => work.stop() }),
  });
  // Webhooks: deliveries of the event outbox's rows, off every request's path.
  // Every node delivers (deliveries are claimed row by row); in a cluster, others' events are heard on the change feed.
  const webhooks = await webhooksArea(app, {
    db: deps.db,
    clock,
    config,
    feeds,
    secrets: secrets.box,
    ...otherNodesHeard,
  });
  await app.register(ciBadgesArea, { releases: releases.releases, config, watch: changes });
  const nativeRegistry = createNativeRegistry(NATIVE_METHODS);
  await app.register(nativeArea, {
    registry: nativeRegistry,
    services: {
      releases,
      feeds,
      upack: upackServices,
      configuration: { ...configuration, status: configurationRuntime.status },
    },
    config,
  });
  await app.register(webUiArea, {
    db: deps.db,
    config,
    clock,
    authenticator,
    feeds,
    upack: upackServices,
    sessions: uiSessions,
    endpoints,
    content: shared,
    deployments,
    connectors,
    moves,
    collector,
    security,
    releases,
    configuration,
    configurationRuntime,
    jobs,
    nativeRegistry,
    disk,
    cluster: () => clusterView(clusterDeps),
    webhooks,
    audit,
    retention: retention.service,
    promotions,
  });
  await registerOpenApiRoutes(app);
  // Last: every area has added its work by now.
  app.addHook("onReady", () => singletons.start());
  app.addHook("preClose", (done) => {
    singletons.stop().then(() => done(), done);
  });
  return app;
}
