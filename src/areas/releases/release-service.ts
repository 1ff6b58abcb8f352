import type { Clock } from "../../domain/clock.js";
import { conflict, DomainError, invalid, notFound } from "../../domain/errors.js";
import type { CatalogRepository } from "./catalog-repository.js";
import type { Application, Build, Deployment, DeploymentOutcome, Pipeline, Release, Variables } from "./model.js";
import type {
  BuildFilter,
  DeploymentFilter,
  ReleaseFilter,
  ReleaseRepository,
  StageEntry,
} from "./release-repository.js";

/** How a request names an application, release or build (docs/compat.md 7.2). */
export interface ApplicationRef {
  readonly applicationId?: number;
  readonly applicationName?: string;
}
export interface ReleaseRef extends ApplicationRef {
  readonly releaseId?: number;
  readonly releaseNumber?: string;
}
export interface BuildRef extends ReleaseRef {
  readonly buildId?: number;
  readonly buildNumber?: string;
}

/**
 * Releases, builds and deployments with the state rules of docs/compat.md 7.4. Deployments are only
 * created here (pending); the job runner runs them through `startDeployment` and
 * `completeDeployment`. `by` is the display name of the actor (actor.ts).
 */
export interface ReleaseService {
  listReleases(filter: ReleaseFilter): Promise<Release[]>;
  /** Active releases per application id (of one application when given); absent means none. */
  countActiveReleases(applicationId?: number): Promise<Map<number, number>>;
  createRelease(
    input: ApplicationRef & {
      releaseNumber: string;
      releaseName?: string;
      pipelineName?: string;
      template?: string;
      variables: Variables;
    },
    by: string,
  ): Promise<Release>;
  cancelRelease(ref: ReleaseRef, reason: string | undefined, by: string): Promise<Release>;
  restoreRelease(ref: ReleaseRef): Promise<Release>;

  /** Builds matching every filter (badges pass `$Name` variables), newest first. */
  listBuilds(filter: BuildFilter): Promise<Build[]>;
  /** A build with a pipeline is deployed to the first stage at once (a pending deployment). */
  createBuild(
    input: ReleaseRef & { pipelineName?: string; buildNumber?: string; variables: Variables },
    by: string,
  ): Promise<{ build: Build; deployments: Deployment[] }>;
  /**
   * Creates a pending deployment to `toStage` (default: the stage after the furthest one that
   * succeeded). A bare deploy (no `toStage`, `force`, `startTime` or variables) of a build whose only
   * deployment is the automatic first-stage one its creation queued answers that deployment instead
   * of creating another while it is pending or executing, and also, when
   * `followEndedFirstStageWithinMs` is given (the Jenkins plugin, jenkins-plugin.ts), up to that
   * long after it ended.
   */
  deployBuild(
    input: BuildRef & {
      toStage?: string;
      force: boolean;
      startTime?: string;
      variables: Variables;
      followEndedFirstStageWithinMs?: number;
    },
    by: string,
  ): Promise<Deployment[]>;
  rejectBuild(ref: BuildRef, by: string): Promise<Build>;

  /** Deployments matching every filter, newest first. */
  listDeployments(filter: DeploymentFilter): Promise<Deployment[]>;
  findDeployment(id: number): Promise<Deployment | undefined>;
  /** The newest deployment (execution) of a build, for badges. */
  latestDeploymentOf(buildId: number): Promise<Deployment | undefined>;
  /** Pending deployments whose start time has come, oldest first (for the job runner). */
  pendingDeployments(limit: number): Promise<Deployment[]>;
  /** Pending deployments without an execution (job) yet, whatever their start time, oldest first. */
  unassignedDeployments(limit: number): Promise<Deployment[]>;
  /** Records the execution (job) that is to run a pending deployment; false when it has one or ended. */
  assignExecution(id: number, executionId: number): Promise<boolean>;
  /**
   * pending -> executing, recording the runner's execution id; false when no longer pending or
   * when another execution was assigned to it.
   */
  startDeployment(id: number, executionId?: number): Promise<boolean>;
  /**
   * Ends a pending or executing deployment with the runner's outcome, appending `log`. Success
   * (or a warning) in the pipeline's final stage marks the build and its release deployed.
   * Throws not_found for an unknown id, conflict when it had already ended.
   */
  completeDeployment(id: number, status: DeploymentOutcome, log: string): Promise<Deployment>;
  /** Release, then build, then deployment variables (later ones win), for plan steps. */
  variablesForDeployment(id: number): Promise<Map<string, string>>;
}

export interface ReleaseServiceDeps {
  readonly releases: ReleaseRepository;
  readonly catalog: CatalogRepository;
  readonly clock: Clock;
  /** Called after deployments were created (the runner dispatches them at once); must not throw. */
  readonly onDeploymentsCreated?: () => void;
}

export function createReleaseService(deps: ReleaseServiceDeps): ReleaseService {
  const { releases, catalog, clock } = deps;
  const now = () => clock.now().toISOString();
  const created = <T>(result: T): T => {
    deps.onDeploymentsCreated?.();
    return result;
  };

  async function application(ref: ApplicationRef): Promise<Application> {
    const idOrName = ref.applicationId ?? ref.applicationName;
    if (idOrName === undefined) {
      throw invalid("MISSING_PARAMETER", "The parameter 'applicationId' or 'applicationName' is required.");
    }
    const found = await catalog.findApplication(idOrName);
    if (!found) throw notFound("APPLICATION_NOT_FOUND", "The specified application was not found.");
    return found;
  }

  /** The release a request names, or undefined when it names none. */
  async function findRelease(ref: ReleaseRef, strict = false): Promise<Release | undefined> {
    const hasApp = ref.applicationId !== undefined || ref.applicationName !== undefined;
    if (ref.releaseId !== undefined) {
      if (strict && hasApp) {
        throw invalid(
          "AMBIGUOUS_RELEASE",
          "Give either 'releaseId', or 'releaseNumber' with the application, not both.",
        );
      }
      const release = await releases.findRelease(ref.releaseId);
      if (!release || (hasApp && release.applicationId !== (await application(ref)).id)) throw releaseNotFound();
      return release;
    }
    if (ref.releaseNumber === undefined) return undefined;
    const app = await application(ref);
    const [release] = await releases.listReleases({ applicationId: app.id, releaseNumber: ref.releaseNumber });
    if (!release) throw releaseNotFound();
    return release;
  }
  async function getRelease(ref: ReleaseRef, strict = false): Promise<Release> {
    const release = await findRelease(ref, strict);
    if (!release)
      throw invalid(
        "MISSING_PARAMETER",
        "The parameter 'releaseId', or 'releaseNumber' with the application, is required.",
      );
    return release;
  }

  async function getBuild(ref: BuildRef): Promise<Build> {
    if (ref.buildId !== undefined) {
      const build = await releases.findBuild(ref.buildId);
      if (!build) throw buildNotFound();
      return build;
    }
    if (ref.buildNumber === undefined)
      throw invalid("MISSING_PARAMETER", "The parameter 'buildId' or 'buildNumber' is required.");
    const release = await findRelease(ref);
    const app = release ? undefined : await application(ref);
    const [build] = await releases.listBuilds({
      buildNumber: ref.buildNumber,
      ...(release ? { releaseId: release.id } : { applicationId: app?.id }),
    });
    if (!build || (!release && build.releaseId !== undefined)) throw buildNotFound();
    return build;
  }

  /**
   * The deployment a bare deploy means when the build's only deployment is the one its creation
   * queued to the first stage (same instant, position 0): that one while it runs, and within the
   * caller's window after it ended (README "Releases, builds and CI badges" states the rule).
   */
  async function automaticFirstStage(
    build: Build,
    input: Parameters<ReleaseService["deployBuild"]>[0],
  ): Promise<Deployment | undefined> {
    const bare =
      input.toStage === undefined && !input.force && input.startTime === undefined && input.variables.size === 0;
    if (!bare) return undefined;
    const deployments = await releases.listDeployments({ buildId: build.id, limit: 2 });
    const [only] = deployments;
    if (deployments.length !== 1 || only === undefined) return undefined;
    if (only.stagePosition !== 0 || only.createdOn !== build.createdOn) return undefined;
    if (only.status === "pending" || only.status === "executing") return only;
    const window = input.followEndedFirstStageWithinMs;
    if (window === undefined || only.ended === undefined) return undefined;
    // A clock a little behind the runner's makes `since` negative: that is "just ended" too.
    return clock.now().getTime() - Date.parse(only.ended) <= window ? only : undefined;
  }

  async function pipelineNamed(name: string): Promise<Pipeline> {
    const pipeline = await catalog.findPipeline(name);
    if (!pipeline) throw notFound("PIPELINE_NOT_FOUND", `The pipeline '${name}' was not found.`);
    return pipeline;
  }

  async function stageEntry(
    pipeline: Pipeline,
    position: number,
    forced: boolean,
    variables: Variables,
    startAfter?: string,
  ): Promise<StageEntry> {
    const stage = pipeline.stages[position];
    if (!stage) throw new Error(`stage ${position} of ${pipeline.name} does not exist`);
    let planSteps = stage.plan ?? [];
    if (stage.planName !== undefined) {
      const plan = await catalog.findPlan(stage.planName);
      if (!plan) {
        throw new DomainError(
          "unprocessable",
          "PLAN_NOT_FOUND",
          `The deployment plan '${stage.planName}' of stage '${stage.name}' does not exist.`,
        );
      }
      planSteps = plan.steps;
    }
    const environment =
      stage.environmentName !== undefined ? await catalog.findEnvironment(stage.environmentName) : undefined;
    return {
      pipelineName: pipeline.name,
      stageName: stage.name,
      stagePosition: position,
      ...(stage.planName !== undefined && { planName: stage.planName }),
      planSteps,
      ...(environment ? { environmentId: environment.id, environmentName: environment.name } : {}),
      ...(environment === undefined &&
        stage.environmentName !== undefined && { environmentName: stage.environmentName }),
      forced,
      ...(startAfter !== undefined && { startAfter }),
      rejectOlder: pipeline.rejectOlderBuilds,
      variables,
    };
  }

  return {
    listReleases: (filter) => releases.listReleases(filter),
    countActiveReleases: (applicationId) => releases.countActiveReleases(applicationId),
    async createRelease(input, by) {
      const app = await application(input);
      const pipeline = input.pipelineName !== undefined ? await pipelineNamed(input.pipelineName) : undefined;
      return releases.insertRelease(
        {
          applicationId: app.id,
          number: input.releaseNumber,
          name: input.releaseName ?? input.releaseNumber,
          ...(pipeline && { pipelineId: pipeline.id }),
          ...(input.template !== undefined && { template: input.template }),
          variables: input.variables,
        },
        { by, now: now() },
      );
    },
    async cancelRelease(ref, reason, by) {
      const release = await getRelease(ref, true);
      if (release.status === "canceled") throw conflict("RELEASE_CANCELED", "The release is already canceled.");
      return releases.cancelRelease(release.id, reason, { by, now: now() });
    },
    async restoreRelease(ref) {
      const release = await getRelease(ref, true);
      if (release.status !== "canceled")
        throw conflict("RELEASE_NOT_CANCELED", "Only a canceled release can be restored.");
      return releases.restoreRelease(release.id);
    },

    listBuilds: (filter) => releases.listBuilds(filter),
    async createBuild(input, by) {
      const release = await findRelease(input);
      const app = release
        ? ((await catalog.findApplication(release.applicationId)) as Application)
        : await application(input);
      if (!release && app.releaseUsage === "required") {
        throw invalid(
          "RELEASE_REQUIRED",
          `Builds of '${app.name}' need a release: give 'releaseId' or 'releaseNumber'.`,
        );
      }
      if (release && app.releaseUsage === "none") {
        throw invalid("RELEASES_DISABLED", `The application '${app.name}' does not use releases.`);
      }
      if (release && release.status !== "active") {
        throw conflict("RELEASE_NOT_ACTIVE", `The release '${release.number}' is ${release.status}.`);
      }
      if (!release && input.pipelineName === undefined) {
        throw invalid("MISSING_PARAMETER", "The parameter 'pipelineName' is required for a build without a release.");
      }
      const pipeline =
        input.pipelineName !== undefined
          ? await pipelineNamed(input.pipelineName)
          : release?.pipelineId !== undefined
            ? await catalog.findPipeline(release.pipelineId)
            : undefined;
      const first =
        pipeline && pipeline.stages.length > 0 ? await stageEntry(pipeline, 0, false, new Map()) : undefined;
      const inserted = await releases.insertBuild(
        {
          applicationId: app.id,
          ...(release && { releaseId: release.id }),
          ...(pipeline && { pipelineId: pipeline.id }),
          ...(input.buildNumber !== undefined && { number: input.buildNumber }),
          scheme: app.buildNumberScheme,
          variables: input.variables,
          rejectPreviousPipelineLess: pipeline === undefined,
        },
        first,
        { by, now: now() },
      );
      return inserted.deployments.length > 0 ? created(inserted) : inserted;
    },
    async deployBuild(input, by) {
      const build = await getBuild(input);
      if (build.status === "rejected") throw conflict("BUILD_REJECTED", `The build '${build.number}' is rejected.`);
      if (build.releaseId !== undefined) {
        const release = await releases.findRelease(build.releaseId);
        if (release?.status === "canceled")
          throw conflict("RELEASE_CANCELED", `The release '${release.number}' is canceled.`);
      }
      const automatic = await automaticFirstStage(build, input);
      if (automatic) return [automatic];
      const pipeline = build.pipelineId !== undefined ? await catalog.findPipeline(build.pipelineId) : undefined;
      if (!pipeline || pipeline.stages.length === 0) {
        throw conflict("NO_PIPELINE", `The build '${build.number}' has no pipeline stages to deploy to.`);
      }
      const reached = (await releases.furthestSuccessfulPosition(build.id)) ?? -1;
      let position = reached + 1;
      if (input.toStage !== undefined) {
        position = pipeline.stages.findIndex((s) => s.name.toLowerCase() === input.toStage?.toLowerCase());
        if (position < 0)
          throw invalid("STAGE_NOT_FOUND", `The pipeline '${pipeline.name}' has no stage '${input.toStage}'.`);
      } else if (position >= pipeline.stages.length) {
        throw conflict("FINAL_STAGE_REACHED", `The build '${build.number}' was already deployed to the final stage.`);
      }
      if (!input.force && position > reached + 1) {
        const previous = pipeline.stages[position - 1]?.name ?? "";
        throw conflict(
          "PREVIOUS_STAGE_NOT_DEPLOYED",
          `The build must first be deployed successfully to '${previous}' (or use force=true).`,
        );
      }
      let startAfter: string | undefined;
      if (input.startTime !== undefined) {
        const time = new Date(input.startTime);
        if (Number.isNaN(time.getTime())) throw invalid("INVALID_START_TIME", "'startTime' must be a date and time.");
        startAfter = time.toISOString();
      }
      const entry = await stageEntry(pipeline, position, input.force, input.variables, startAfter);
      return created([await releases.enterStage(build.id, entry, { by, now: now() })]);
    },
    async rejectBuild(ref, by) {
      const build = await getBuild(ref);
      if (build.status === "rejected")
        throw conflict("BUILD_REJECTED", `The build '${build.number}' is already rejected.`);
      return releases.rejectBuild(build.id, { by, now: now() });
    },

    listDeployments: (filter) => releases.listDeployments(filter),
    findDeployment: (id) => releases.findDeployment(id),
    latestDeploymentOf: async (buildId) => (await releases.listDeployments({ buildId, limit: 1 }))[0],
    pendingDeployments: (limit) => releases.pendingDeployments(now(), limit),
    unassignedDeployments: (limit) => releases.unassignedDeployments(limit),
    assignExecution: (id, executionId) => releases.assignExecution(id, executionId),
    startDeployment: (id, executionId) => releases.startDeployment(id, executionId, now()),
    async completeDeployment(id, status, log) {
      const deployment = await releases.findDeployment(id);
      if (!deployment) throw notFound("DEPLOYMENT_NOT_FOUND", `No deployment has the id ${id}.`);
      const build = (await releases.findBuild(deployment.buildId)) as Build;
      const pipeline = build.pipelineId !== undefined ? await catalog.findPipeline(build.pipelineId) : undefined;
      const final = pipeline !== undefined && deployment.stagePosition === pipeline.stages.length - 1;
      const text = log === "" || log.endsWith("\n") ? log : `${log}\n`;
      if (!(await releases.finishDeployment(id, status, text, final, now()))) {
        throw conflict("DEPLOYMENT_ENDED", `The deployment ${id} has already ended.`);
      }
      return (await releases.findDeployment(id)) as Deployment;
    },
    async variablesForDeployment(id) {
      const deployment = await releases.findDeployment(id);
      if (!deployment) throw notFound("DEPLOYMENT_NOT_FOUND", `No deployment has the id ${id}.`);
      const merged = new Map<string, string>();
      const layers = [
        deployment.releaseId !== undefined
          ? await releases.variablesOf("release", deployment.releaseId)
          : new Map<string, string>(),
        await releases.variablesOf("build", deployment.buildId),
        await releases.variablesOf("deployment", id),
      ];
      for (const layer of layers) for (const [name, value] of layer) merged.set(name, value);
      return merged;
    },
  };
}

function releaseNotFound() {
  return notFound("RELEASE_NOT_FOUND", "The specified release was not found.");
}
function buildNotFound() {
  return notFound("BUILD_NOT_FOUND", "The specified build was not found.");
}
