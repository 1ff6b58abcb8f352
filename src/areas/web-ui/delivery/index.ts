import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";

/**
 * Delivery (issue 16 section 1): applications, releases, builds and deployments with their live
 * logs, the actions the releases API offers, the badge builder; the badge link targets answer HTML
 * to browsers and JSON to clients asking for it.
 */
export async function registerDeliveryPages(_app: FastifyInstance, _deps: WebUiDeps): Promise<void> {}
