import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";

/**
 * Configuration management (issue 16 section 1): servers, roles and environments with their drift
 * status, a server's items and what differs, check and remediate, the job logs.
 */
export async function registerConfigurationPages(_app: FastifyInstance, _deps: WebUiDeps): Promise<void> {}
