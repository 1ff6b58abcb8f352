import type { FastifyRequest } from "fastify";

/**
 * The Jenkins BuildMaster plugin's "deploy to first stage" (docs/clients.md 3.8, docs/compat.md 7.5):
 * it creates a build, waits until every pending or executing deployment of the release has ended
 * (polling every 7 s), then sends an unstaged deploy and follows the deployments it answers. On
 * Wharf the create already queued the first-stage deployment, so by then that deployment has ended
 * and "next stage" would skip a stage (or 409 on a one-stage pipeline). The release service answers
 * the automatic deployment instead when the request comes from the plugin within this long of its
 * end (release-service.ts `deployBuild`, README "Releases, builds and CI badges").
 */
export const JENKINS_FIRST_STAGE_WINDOW_MS = 60_000;

/**
 * The plugin's HTTP library (HttpEasy) sends a stray `charset: UTF-8` request header with every
 * form (docs/clients.md 3.8, observed [ran]); no other known BuildMaster client sends one.
 */
export function isJenkinsBuildMasterPlugin(request: FastifyRequest): boolean {
  return request.headers.charset !== undefined;
}
