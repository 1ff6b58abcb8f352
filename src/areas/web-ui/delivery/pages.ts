import type { FastifyReply, FastifyRequest } from "fastify";
import { releasesNeed } from "../../releases/routes-common.js";
import type { Application, Build, Deployment, Pipeline, Release } from "../../releases/model.js";
import type { WebUiDeps } from "../index.js";
import { defineView, sendPage } from "../views.js";
import {
  applicationUrl,
  badgeOf,
  buildUrl,
  executionLogUrl,
  executionUrl,
  isRunning,
  releaseUrl,
  sameName,
  stagesOf,
  whenOf,
} from "./present.js";
import { APPLICATION, APPLICATIONS, BUILD, EXECUTION, RELEASE } from "./templates.js";

const APPLICATIONS_VIEW = defineView("delivery-applications", APPLICATIONS);
const APPLICATION_VIEW = defineView("delivery-application", APPLICATION);
const RELEASE_VIEW = defineView("delivery-release", RELEASE);
const BUILD_VIEW = defineView("delivery-build", BUILD);
const EXECUTION_VIEW = defineView("delivery-execution", EXECUTION);

/** What every page needs to read: the releases API's own read need (`/api/releases`, the JSON pages). */
export const VIEW_NEED = releasesNeed("Applications_View");
const RECENT_BUILDS = 20;

/** A page's answer with an optional refusal message (a POST the service refused) and its status. */
export interface Refusal {
  readonly status: number;
  readonly message: string;
}

/**
 * The delivery pages, rendered for a viewer who may read the releases area (the caller checked
 * VIEW_NEED). Each returns false when what the URL names does not exist, so that the caller answers
 * 404. The actions' buttons are shown only for the API's needs of those actions.
 */
export function deliveryPages({ releases: { releases, catalog }, config }: WebUiDeps) {
  const send = (reply: FastifyReply, refusal: Refusal | undefined) =>
    refusal === undefined ? reply : reply.code(refusal.status);

  /** The pipeline by name, or undefined once deleted (the build keeps its name). */
  async function pipelineNamed(name: string | undefined): Promise<Pipeline | undefined> {
    if (name === undefined) return undefined;
    return (await catalog.listPipelines()).find((pipeline) => pipeline.name.toLowerCase() === name.toLowerCase());
  }

  const buildRow = (build: Build) => ({
    url: buildUrl(build.applicationId, build.id),
    number: build.number,
    release: build.releaseNumber ?? "",
    releaseUrl: build.releaseNumber === undefined ? undefined : releaseUrl(build.applicationId, build.releaseNumber),
    stage: build.furthestStage ?? "",
    status: build.status,
    created: whenOf(build.createdOn),
  });

  /** The create-build form when the viewer may create builds (ReleasePackages_Create). */
  async function createBuildForm(request: FastifyRequest, application: Application, release?: Release) {
    if (!(await request.can(releasesNeed("ReleasePackages_Create")))) return undefined;
    if (release !== undefined) {
      if (release.status !== "active") return undefined;
      // The release is the page's (its URL): no choice to offer.
      return { action: `${releaseUrl(application.id, release.number)}/builds` };
    }
    const active = await releases.listReleases({ applicationId: application.id, status: "active" });
    const withoutRelease = application.releaseUsage !== "required";
    // Nothing to build: the application needs a release and has no active one.
    if (active.length === 0 && !withoutRelease) return undefined;
    return {
      action: `${applicationUrl(application.id)}/builds`,
      releases: active.map((r) => r.number),
      ...(withoutRelease && { pipelines: (await catalog.listPipelines()).map((p) => p.name) }),
    };
  }

  return {
    async applications(request: FastifyRequest, reply: FastifyReply) {
      const [applications, active] = await Promise.all([catalog.listApplications(), releases.countActiveReleases()]);
      return sendPage(request, reply, APPLICATIONS_VIEW, {
        title: "Applications",
        applications: applications.map((app) => ({
          url: applicationUrl(app.id),
          name: app.name,
          description: app.description ?? "",
          group: app.groupName ?? "",
          active: app.active,
          activeReleases: active.get(app.id) ?? 0,
        })),
      });
    },

    async application(request: FastifyRequest, reply: FastifyReply, applicationId: number, refusal?: Refusal) {
      const application = await catalog.findApplication(applicationId);
      if (application === undefined) return false;
      const [appReleases, builds] = await Promise.all([
        releases.listReleases({ applicationId }),
        releases.listBuilds({ applicationId, limit: RECENT_BUILDS }),
      ]);
      const mayCreateRelease = await request.can(releasesNeed("Releases_Manage"));
      await sendPage(request, send(reply, refusal), APPLICATION_VIEW, {
        title: application.name,
        application,
        message: refusal?.message,
        releases: appReleases.map((release) => ({
          url: releaseUrl(applicationId, release.number),
          number: release.number,
          name: release.name,
          pipeline: release.pipelineName ?? "",
          status: release.status,
          created: whenOf(release.createdOn),
        })),
        builds: builds.map(buildRow),
        createRelease: mayCreateRelease
          ? {
              action: `${applicationUrl(applicationId)}/releases`,
              pipelines: (await catalog.listPipelines()).map((pipeline) => pipeline.name),
            }
          : undefined,
        createBuild: await createBuildForm(request, application),
        badge: badgeOf(request, config, { $ApplicationId: String(applicationId) }, "application"),
      });
      return true;
    },

    async release(
      request: FastifyRequest,
      reply: FastifyReply,
      applicationId: number,
      number: string,
      refusal?: Refusal,
    ) {
      const application = await catalog.findApplication(applicationId);
      const [release] = await releases.listReleases({ applicationId, releaseNumber: number });
      if (application === undefined || release === undefined) return false;
      const builds = await releases.listBuilds({ applicationId, releaseId: release.id });
      const mayManage = await request.can(releasesNeed("Releases_Manage"));
      const here = releaseUrl(applicationId, release.number);
      await sendPage(request, send(reply, refusal), RELEASE_VIEW, {
        title: `${application.name} release ${release.number}`,
        release,
        message: refusal?.message,
        applicationUrl: applicationUrl(applicationId),
        created: whenOf(release.createdOn),
        canceled: whenOf(release.canceledOn),
        stages:
          (await pipelineNamed(release.pipelineName))?.stages.map((stage) => ({
            name: stage.name,
            environment: sameName(stage.environmentName, stage.name) ? "" : (stage.environmentName ?? ""),
          })) ?? [],
        builds: builds.map(buildRow),
        cancelAction: mayManage && release.status === "active" ? `${here}/cancel` : undefined,
        restoreAction: mayManage && release.status === "canceled" ? `${here}/restore` : undefined,
        createBuild: await createBuildForm(request, application, release),
      });
      return true;
    },

    async build(
      request: FastifyRequest,
      reply: FastifyReply,
      applicationId: number,
      buildId: number,
      refusal?: Refusal,
    ) {
      const [build] = await releases.listBuilds({ applicationId, buildId });
      if (build === undefined) return false;
      const [deployments, pipeline] = await Promise.all([
        releases.listDeployments({ applicationId, buildId }),
        pipelineNamed(build.pipelineName),
      ]);
      const stages = stagesOf(pipeline, build, deployments);
      // While a deployment of the build runs, a plain deploy would only answer that one: no button then.
      const next = deployments.some(isRunning) ? undefined : stages.find((stage) => stage.next);
      const here = buildUrl(applicationId, buildId);
      const active = build.status === "active";
      await sendPage(request, send(reply, refusal), BUILD_VIEW, {
        title: `${build.applicationName} build ${build.number}`,
        build,
        message: refusal?.message,
        applicationUrl: applicationUrl(applicationId),
        releaseUrl: build.releaseNumber === undefined ? undefined : releaseUrl(applicationId, build.releaseNumber),
        created: whenOf(build.createdOn),
        rejected: whenOf(build.rejectedOn),
        stages,
        nextStage: next?.name,
        deployAction:
          next !== undefined && (await request.can(releasesNeed("ReleasePackages_Deploy")))
            ? `${here}/deploy`
            : undefined,
        rejectAction:
          active && (await request.can(releasesNeed("ReleasePackages_Manage"))) ? `${here}/reject` : undefined,
        deployments: deployments.map((deployment) => ({
          url: executionUrl(applicationId, deployment.id),
          id: deployment.id,
          stage: deployment.stageName,
          status: deployment.status,
          started: whenOf(deployment.started),
          ended: whenOf(deployment.ended),
        })),
        badge: badgeOf(
          request,
          config,
          {
            $ApplicationId: String(applicationId),
            ...(build.releaseNumber !== undefined && { $ReleaseNumber: build.releaseNumber }),
            $BuildNumber: build.number,
          },
          "build",
        ),
      });
      return true;
    },
  };
}

/** The execution page: the deployment and its log so far; the script reads on while it runs. */
export async function sendExecutionPage(
  request: FastifyRequest,
  reply: FastifyReply,
  deployment: Deployment,
  log: string,
) {
  const { applicationId } = deployment;
  return sendPage(request, reply, EXECUTION_VIEW, {
    title: `Deployment ${deployment.id} of ${deployment.applicationName}`,
    deployment,
    log,
    running: isRunning(deployment),
    logUrl: executionLogUrl(applicationId, deployment.id),
    applicationUrl: applicationUrl(applicationId),
    buildUrl: buildUrl(applicationId, deployment.buildId),
    releaseUrl: deployment.releaseNumber === undefined ? "" : releaseUrl(applicationId, deployment.releaseNumber),
    created: whenOf(deployment.createdOn),
    started: whenOf(deployment.started),
    ended: whenOf(deployment.ended),
  });
}
