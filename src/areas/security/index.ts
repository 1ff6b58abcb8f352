import type { FastifyPluginAsync } from "fastify";
import { apiKeyRoutes } from "./api-key-routes.js";
import { groupRoutes } from "./group-routes.js";
import { permissionRoutes } from "./permission-routes.js";
import type { SecurityServices } from "./service.js";
import { taskRoutes } from "./task-routes.js";
import { userRoutes } from "./user-routes.js";

export { createSecurityServices, type SecurityServices } from "./service.js";

/**
 * API keys and the security API (docs/compat.md 5.4): `/api/api-keys/...` and `/api/security/...`.
 * Authentication itself (every transport, one principal) is http/auth.ts with this area's
 * authenticator; these routes manage what it reads.
 */
export const securityArea: FastifyPluginAsync<{ services: SecurityServices }> = async (app, { services }) => {
  await app.register(apiKeyRoutes, { apiKeys: services.apiKeys });
  await app.register(userRoutes, { users: services.users });
  await app.register(groupRoutes, { users: services.users });
  await app.register(permissionRoutes, { permissions: services.permissions });
  await app.register(taskRoutes, { permissions: services.permissions });
};
