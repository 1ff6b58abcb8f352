import { mkdir } from "node:fs/promises";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { DomainError } from "../../domain/errors.js";
import { createPlanExecutor, type FetchPackage } from "../../jobs/plan-steps.js";
import type { Job, JobHandler, JobLogLine, JobRunner, JobRunnerLogger } from "../../jobs/runner.js";
import { createGuardedFetch, FETCH_SETTINGS, MAX_REDIRECTS } from "../../net/fetch-guard.js";
import type { BlobStore } from "../../storage/blob-store.js";
import { dataPaths } from "../../storage/data-paths.js";
import type { MetadataDb } from "../../storage/metadata-db.js";
import type { UpackDownloadService } from "../upack/index.js";
import type { Deployment } from "./model.js";
import type { ReleaseService } from "./release-service.js";

/**
 * Deployments really run (docs/PRODUCT.md "How the delivery half becomes real"; issue 6 section 1):
 * each pending deployment becomes a `deployment` job of the persistent job runner, which runs the
 * stage's plan steps it copied with the plan executor and then ends the deployment with the
 * job's outcome and log, so that the state rules apply (docs/compat.md 7.4).
 *
 * Dispatch: a pending deployment without an execution gets a job (its id recorded as the
 * deployment's execution id; a startTime becomes the job's notBefore). It happens when the
 * release service creates deployments (no latency), at start-up, and every POLL_MS: other
 * processes on the same database (the CLI) create deployments this process hears nothing about.
 *
 * Restart: the runner fails a job found executing at start-up; its onFinished ends the
 * deployment failed with the runner's line. The deployments' job ids make a stray second job (a
 * crash between enqueue and recording the id) harmless: it finds the deployment taken.
 *
 * The job runner is one per database (app.ts creates it, other areas add their kinds); this module
 * adds the `deployment` kind, at most WHARF_DEPLOY_CONCURRENCY of them executing at once.
 */
export interface DeploymentRunner {
  /** Dispatches pending deployments (the job runner, started by app.ts, runs them). */
  start(): Promise<void>;
  /** Stops dispatching (the job runner's stop waits for executing deployments). */
  stop(): Promise<void>;
  /** Dispatches pending deployments soon; cheap to call often. */
  wake(): void;
  /** The deployment's log: the final one once ended, the job's lines so far while it runs. */
  logOf(deployment: Deployment): Promise<string>;
}

export interface DeploymentRunnerDeps {
  /** Either database: the runner reads and writes only through `releases` and `jobs`. */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Pick<
    Config,
    | "dataDir"
    | "deployRoot"
    | "deployConcurrency"
    | "fetchAllowPrivate"
    | "fetchTimeoutMs"
    | "fetchMaxBytes"
    | "outboundProxy"
  >;
  readonly releases: ReleaseService;
  /** Opens a stored universal package for deploy-package steps (packageOpener). */
  readonly fetchPackage: FetchPackage;
  readonly log: JobRunnerLogger;
  /** The database's one job runner, not started yet: the `deployment` kind is added to it. */
  readonly jobs: JobRunner;
}

const DEPLOYMENT_JOB = "deployment";
const POLL_MS = 1_000;
const BATCH = 100;

/** One line per job log line: `<ISO time> <LEVEL> <message>`. */
function formatJobLog(lines: readonly JobLogLine[]): string {
  return lines.map((l) => `${l.loggedAt.toISOString()} ${l.level.toUpperCase().padEnd(5)} ${l.message}\n`).join("");
}

const deploymentIdOf = (job: Job): number | undefined => {
  const id = (job.payload as { deploymentId?: unknown } | null)?.deploymentId;
  return typeof id === "number" && Number.isSafeInteger(id) ? id : undefined;
};

/** deploy-package's source: a package stored in a local universal feed, read as the system. */
export function packageOpener(upack: { downloads: UpackDownloadService; downloadBlobs: BlobStore }): FetchPackage {
  return async (feedName, group, name, version) => {
    const latest = version.toLowerCase() === "latest";
    const tail = [group, name, ...(latest ? [] : [version])].filter((part) => part !== "").join("/");
    const { feed, target } = await upack.downloads.resolve(feedName, tail, latest);
    const file = await upack.downloads.packageFile(feed, target);
    const stream = await upack.downloadBlobs.open(file.sha256);
    if (stream === undefined) {
      throw new DomainError("unavailable", "PACKAGE_FILE_MISSING", `The file of ${name} ${target.version} is missing.`);
    }
    return stream;
  };
}

export function createDeploymentRunner(deps: DeploymentRunnerDeps): DeploymentRunner {
  const { releases, config, log, jobs } = deps;
  const tempDir = dataPaths(config.dataDir).tmp;
  const executor = createPlanExecutor({
    fetch: createGuardedFetch({
      allowPrivate: config.fetchAllowPrivate,
      timeoutMs: config.fetchTimeoutMs,
      maxBytes: config.fetchMaxBytes,
      maxRedirects: MAX_REDIRECTS,
      settings: FETCH_SETTINGS,
      proxy: config.outboundProxy,
    }),
    fetchPackage: deps.fetchPackage,
    deployRoots: config.deployRoot === undefined ? [] : [config.deployRoot],
    tempDir,
  });

  const runDeployment: JobHandler = async (job, context) => {
    const id = deploymentIdOf(job);
    const deployment = id === undefined ? undefined : await releases.findDeployment(id);
    if (id === undefined || deployment === undefined) {
      context.log("error", `The deployment ${id ?? "(none)"} does not exist.`);
      return "failed";
    }
    if (!(await releases.startDeployment(id, job.id))) {
      const now = (await releases.findDeployment(id)) ?? deployment;
      context.log(
        "warn",
        `The deployment ${id} was not started: it is ${now.status} (execution ${now.executionId ?? "none"}).`,
      );
      return "failed";
    }
    const where = `${deployment.stageName}${deployment.environmentName === undefined ? "" : ` (${deployment.environmentName})`}`;
    context.log("info", `Deploying ${deployment.applicationName} build ${deployment.buildNumber} to ${where}.`);
    const builtIn: Record<string, string> = {
      ApplicationName: deployment.applicationName,
      BuildNumber: deployment.buildNumber,
      PipelineStageName: deployment.stageName,
      ...(deployment.releaseNumber !== undefined && { ReleaseNumber: deployment.releaseNumber }),
      ...(deployment.environmentName !== undefined && { EnvironmentName: deployment.environmentName }),
    };
    // Built-in names win: a build variable must not pretend to be another application.
    const variables = { ...Object.fromEntries(await releases.variablesForDeployment(id)), ...builtIn };
    const result = await executor.run(
      { steps: [...deployment.planSteps] },
      { variables, signal: context.signal, log: (level, message) => context.log(level, message) },
    );
    return result.outcome;
  };

  const onFinished = async (job: Job) => {
    const id = deploymentIdOf(job);
    if (id === undefined || job.status === "pending" || job.status === "executing") return;
    const deployment = await releases.findDeployment(id);
    if (deployment === undefined || (deployment.status !== "pending" && deployment.status !== "executing")) return;
    // Another job owns it (a stray duplicate): its own end will complete it.
    if (deployment.executionId !== undefined && deployment.executionId !== job.id) return;
    await releases.completeDeployment(id, job.status, formatJobLog(await jobs.readLog(job.id)));
  };

  jobs.handle(DEPLOYMENT_JOB, runDeployment, { concurrency: Math.max(0, config.deployConcurrency), onFinished });

  let state: "new" | "started" | "stopped" = "new";
  let pass: Promise<void> | undefined;
  let again = false;
  let poll: NodeJS.Timeout | undefined;

  async function dispatch(): Promise<void> {
    for (;;) {
      const batch = await releases.unassignedDeployments(BATCH);
      for (const deployment of batch) {
        if (state !== "started") return;
        const when = deployment.startAfter === undefined ? {} : { notBefore: new Date(deployment.startAfter) };
        const jobId = await jobs.enqueue(DEPLOYMENT_JOB, { deploymentId: deployment.id }, when);
        // False when the job already took it, or it was canceled meanwhile: the job sees either.
        await releases.assignExecution(deployment.id, jobId);
      }
      if (batch.length < BATCH) return;
    }
  }

  function wake(): void {
    if (state !== "started") return;
    if (pass !== undefined) {
      again = true;
      return;
    }
    pass = (async () => {
      do {
        again = false;
        await dispatch();
      } while (again && state === "started");
    })()
      .catch((error: unknown) => log.error({ err: error }, "could not dispatch pending deployments"))
      .finally(() => {
        pass = undefined;
      });
  }

  return {
    async start() {
      if (state !== "new" || config.deployConcurrency === 0) return;
      state = "started";
      await mkdir(tempDir, { recursive: true });
      wake();
      poll = setInterval(wake, POLL_MS).unref();
    },
    async stop() {
      if (state !== "started") {
        state = "stopped";
        return;
      }
      state = "stopped";
      clearInterval(poll);
      await pass;
    },
    wake,
    async logOf(deployment) {
      const live = deployment.status === "executing" || deployment.status === "pending";
      if (!live || deployment.executionId === undefined) return deployment.log;
      const job = await jobs.findJob(deployment.executionId);
      return job === undefined ? deployment.log : deployment.log + formatJobLog(await jobs.readLog(job.id));
    },
  };
}
