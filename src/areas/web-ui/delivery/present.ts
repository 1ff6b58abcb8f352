import type { FastifyRequest } from "fastify";
import type { Config } from "../../../config.js";
import { publicBaseUrl } from "../../../http/base-url.js";
import type { Build, Deployment, Pipeline } from "../../releases/model.js";
import { formatDate } from "../pages/present.js";
import { UI_MOUNT_PREFIX } from "../browser-mounts.js";

/**
 * What the delivery pages show of releases, builds and deployments, and their URLs. Ids are numbers;
 * release numbers are user data, so they are percent-encoded in every URL (and escaped by the
 * templates in text).
 */

export const applicationUrl = (applicationId: number) => `/applications/${applicationId}`;
export const releaseUrl = (applicationId: number, releaseNumber: string) =>
  `${applicationUrl(applicationId)}/releases/${encodeURIComponent(releaseNumber)}`;
export const buildUrl = (applicationId: number, buildId: number) =>
  `${applicationUrl(applicationId)}/builds/${buildId}`;
export const executionUrl = (applicationId: number, deploymentId: number) =>
  `${applicationUrl(applicationId)}/executions/${deploymentId}`;
/** The execution's log from an offset, as JSON for the page's script (a `ui` route: the cookie counts). */
export const executionLogUrl = (applicationId: number, deploymentId: number) =>
  `/ui${executionUrl(applicationId, deploymentId)}/log`;

export const whenOf = (stored: string | undefined) => (stored === undefined ? "" : formatDate(stored));

/** A deployment that has not ended: its page keeps reading the log. */
export const isRunning = (deployment: Deployment) =>
  deployment.status === "pending" || deployment.status === "executing";

export interface StageView {
  readonly name: string;
  readonly environment: string;
  /** The newest deployment of the build to this stage, if any. */
  readonly deployment?: { readonly url: string; readonly status: string; readonly when: string };
  /** The stage the build's next plain deploy goes to. */
  readonly next: boolean;
}

/**
 * The pipeline's stages with where the build stands: each stage's newest deployment (the list is
 * newest first), and the stage after the furthest one deployed successfully (the service's default
 * target of a deploy) marked as next.
 */
export function stagesOf(
  pipeline: Pipeline | undefined,
  build: Build,
  deployments: readonly Deployment[],
): StageView[] {
  if (pipeline === undefined) return [];
  const furthest = build.furthestPosition ?? -1;
  return pipeline.stages.map((stage, position) => {
    const newest = deployments.find((deployment) => deployment.stageName.toLowerCase() === stage.name.toLowerCase());
    return {
      name: stage.name,
      environment: sameName(stage.environmentName, stage.name) ? "" : (stage.environmentName ?? ""),
      ...(newest && {
        deployment: {
          url: executionUrl(build.applicationId, newest.id),
          status: newest.status,
          when: whenOf(newest.ended ?? newest.started ?? newest.createdOn),
        },
      }),
      next: build.status === "active" && position === furthest + 1,
    };
  });
}

/** A stage's environment is shown only when it is not named as the stage (the usual case). */
export const sameName = (a: string | undefined, b: string) => a === undefined || a.toLowerCase() === b.toLowerCase();

export interface BadgeView {
  /** The preview's source: this origin's copy of the image route, which the session authenticates. */
  readonly preview: string;
  readonly image: string;
  readonly link: string;
  readonly snippets: ReadonlyArray<{ readonly label: string; readonly code: string }>;
}

/**
 * The badge of the newest build matching `filters` (the ci-badges area's `$` filters): its image URL,
 * the link URL that leads back to `page`, and the Markdown and HTML that embed both. Absolute URLs,
 * since they are pasted elsewhere (a README).
 */
export function badgeOf(
  request: FastifyRequest,
  config: Config,
  filters: Record<string, string>,
  page: "application" | "build",
): BadgeView {
  const base = publicBaseUrl(config.baseUrl, request, config.port);
  const query = new URLSearchParams(Object.entries(filters)).toString();
  const image = `${base}/api/ci-badges/image?${query}`;
  const link = `${base}/api/ci-badges/link?${query}&page=${page}`;
  return {
    preview: `${UI_MOUNT_PREFIX}/api/ci-badges/image?${query}`,
    image,
    link,
    snippets: [
      { label: "Markdown", code: `[![Build status](${image})](${link})` },
      { label: "HTML", code: `<a href="${attribute(link)}"><img src="${attribute(image)}" alt="Build status"></a>` },
    ],
  };
}

/** A URL inside a double-quoted HTML attribute of a snippet (the snippet itself is escaped again on the page). */
const attribute = (text: string) => text.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
