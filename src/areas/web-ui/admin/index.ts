import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";
import { registerApiKeysPage } from "./api-keys-page.js";

/**
 * Administration for administrators (issue 16 section 1): feeds (create, edit, delete, storage),
 * connectors, API keys, users, groups, permissions, server health and version, and a signed-in
 * user's own sessions.
 */
export async function registerAdminPages(app: FastifyInstance, deps: WebUiDeps): Promise<void> {
  registerApiKeysPage(app, deps);
}
