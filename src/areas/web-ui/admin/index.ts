import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";
import { registerAccountPage } from "./account-page.js";
import { registerApiKeysPage } from "./api-keys-page.js";
import { registerConnectorsPage } from "./connectors-page.js";
import { registerFeedPages } from "./feeds-pages.js";
import { registerLandingPage } from "./landing-page.js";
import { registerSecurityPages } from "./security-pages.js";

/**
 * Administration for administrators (issue 16 section 1): feeds (create, edit, delete, storage),
 * connectors, API keys, users, groups, permissions, server health and version, and a signed-in
 * user's own sessions.
 */
export async function registerAdminPages(app: FastifyInstance, deps: WebUiDeps): Promise<void> {
  registerLandingPage(app, deps);
  registerFeedPages(app, deps);
  registerConnectorsPage(app, deps);
  registerSecurityPages(app, deps);
  registerApiKeysPage(app, deps);
  registerAccountPage(app, deps);
}
